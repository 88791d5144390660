//! main -> run -> {engine::Mixer<u64>::churn, engine::Mixer<u32>::churn}: the CPU
//! time splits 2:1. A generic type and a trait object give v0 or legacy
//! mangled names with generics and `for<'a>` binders to demangle.
//! Usage: rshot [SECONDS] (default: forever).

mod engine {
    use std::hint::black_box;

    pub struct Mixer<T> {
        pub state: T,
    }

    pub trait Step {
        fn step(&mut self, rounds: u64) -> u64;
    }

    impl Mixer<u64> {
        #[inline(never)]
        pub fn churn(&mut self, rounds: u64) -> u64 {
            for i in 0..rounds {
                self.state = black_box(self.state.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
            self.state
        }
    }

    impl Mixer<u32> {
        #[inline(never)]
        pub fn churn(&mut self, rounds: u64) -> u64 {
            for i in 0..rounds {
                self.state = black_box(self.state.wrapping_mul(1664525).wrapping_add(i as u32));
            }
            u64::from(self.state)
        }
    }

    impl Step for Mixer<u64> {
        #[inline(never)]
        fn step(&mut self, rounds: u64) -> u64 {
            self.churn(rounds)
        }
    }

    /// A function taking a higher-ranked closure: its symbol carries a `for<'a>` binder.
    #[inline(never)]
    pub fn with_each<F: for<'a> Fn(&'a mut dyn Step) -> u64>(steps: &mut [Box<dyn Step>], f: F) -> u64 {
        let mut sum = 0u64;
        for s in steps.iter_mut() {
            sum = sum.wrapping_add(f(s.as_mut()));
        }
        sum
    }
}

use engine::{Mixer, Step};
use std::time::{Duration, Instant};

#[inline(never)]
fn run(deadline: Option<Instant>) -> u64 {
    let mut wide = Mixer::<u64> { state: 1 };
    let mut narrow = Mixer::<u32> { state: 1 };
    let mut steps: Vec<Box<dyn Step>> = vec![Box::new(Mixer::<u64> { state: 7 })];
    let mut sum = 0u64;
    loop {
        sum = sum.wrapping_add(wide.churn(200_000));
        sum = sum.wrapping_add(narrow.churn(100_000));
        sum = sum.wrapping_add(engine::with_each(&mut steps, |s| s.step(1)));
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return sum;
        }
    }
}

fn main() {
    let seconds: Option<f64> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    let deadline = seconds.map(|s| Instant::now() + Duration::from_secs_f64(s));
    std::process::exit((run(deadline) & 1) as i32 * 0);
}
