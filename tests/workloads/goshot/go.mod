module goshot

go 1.19
