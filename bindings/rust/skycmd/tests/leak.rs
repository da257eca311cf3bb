// The leak check, in its own test binary so no other test allocates meanwhile.
// 1200 open/decide/close rounds (pooled decide + an explicit session); between round 600 and
// round 1200 the C heap in use (glibc mallinfo2) must not grow by 64 KiB (a leak of ~110 bytes
// per round would exceed it; the measured drift without leaks is 4-17 KiB there, after a
// first-600-rounds settling of caches) and the RSS must not grow by 4 MiB. The exact check
// is valgrind on the C-level loop (bindings/tools/leak_loop.c).
mod common;

use common::*;
use skycmd::{Model, Options};

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_in_use() -> i64 {
    #[repr(C)]
    struct Mallinfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    extern "C" {
        fn mallinfo2() -> Mallinfo2;
    }
    let m = unsafe { mallinfo2() };
    (m.uordblks + m.hblkhd) as i64
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_in_use() -> i64 {
    -1
}

fn rss_kib() -> i64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    s.split_whitespace().nth(1).unwrap().parse::<i64>().unwrap() * 4
}

#[test]
fn open_decide_close_loop() {
    let Some(p) = model() else { return };
    let req = request();
    let mut at600 = (0, 0);
    for i in 0..1200 {
        let m = Model::open(&p, &Options::new()).unwrap();
        m.decide(&req).unwrap();
        let mut s = m.session().unwrap();
        s.decide(&req).unwrap();
        drop(s);
        if i % 2 == 0 {
            m.close().unwrap();
        } else {
            drop(m);
        }
        if i == 599 {
            at600 = (heap_in_use(), rss_kib());
        }
    }
    let (heap, rss) = (heap_in_use(), rss_kib());
    eprintln!(
        "rust loop: C heap in use after 600 rounds {} B, after 1200 {} B (growth {} B); RSS {} -> {} KiB (growth {} KiB)",
        at600.0, heap, heap - at600.0, at600.1, rss, rss - at600.1
    );
    if heap >= 0 {
        // 600 rounds: a leaked model, session or response (each >= 1 KiB) would add >= 600 KiB.
        // The bound leaves room for allocator noise (seen up to ~17 KiB) and nothing more.
        assert!(heap - at600.0 < 64 * 1024, "C heap grew by {} bytes", heap - at600.0);
    }
    assert!(rss - at600.1 < 4096, "RSS grew by {} KiB", rss - at600.1);
}
