//! What the paper tests share: a tiny run's options.

use engram_bench::paper::Options;
use std::path::PathBuf;

/// Two threads, 2,000 rows, 0.05 s per point, every protocol, SVG plots into `out`.
pub fn options(figures: &[u32], out: PathBuf) -> Options {
    Options {
        figures: figures.to_vec(),
        quick: true,
        threads: 2,
        rows: 2_000,
        seconds: 0.05,
        protocols: Options::PROTOCOLS.to_vec(),
        out,
        format: "svg".into(),
        seed: 3,
        progress: false,
        command: "test".into(),
    }
}
