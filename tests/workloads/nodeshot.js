// run -> hotA / hotB (2:1: hotA loops twice as long) for Node's JIT. Run it
// with --perf-basic-prof (V8 writes /tmp/perf-PID.map) and --no-turbo-inlining:
// once run is optimized, V8 would otherwise inline both callees into it and
// every tool (perf too) would see one frame. When the file LATE_FILE exists,
// hotB's calls go to lateC, compiled only then: its perf-map line is written
// after a profiler first read the map.
// Usage: node --perf-basic-prof --no-turbo-inlining nodeshot.js [SECONDS [LATE_FILE]]
'use strict';
const fs = require('fs');

function hotA(acc) {
  for (let i = 0; i < 20000; i++) acc = (Math.imul(acc, 1103515245) + i) | 0;
  return acc;
}

function hotB(acc) {
  for (let i = 0; i < 10000; i++) acc = (Math.imul(acc, 1103515245) + i) | 0;
  return acc;
}

function lateC(acc) {
  for (let i = 0; i < 10000; i++) acc = (Math.imul(acc, 69069) + i) | 0;
  return acc;
}

function run(deadline, lateFile) {
  let acc = 1;
  let late = false;
  for (let n = 1; ; n++) {
    acc = hotA(acc);
    acc = late ? lateC(acc) : hotB(acc);
    if ((n & 255) === 0) {
      if (Date.now() >= deadline) return acc;
      late = late || (lateFile !== '' && fs.existsSync(lateFile));
    }
  }
}

const seconds = process.argv.length > 2 ? Number(process.argv[2]) : Infinity;
console.log(run(Date.now() + seconds * 1000, process.argv[3] || ''));
