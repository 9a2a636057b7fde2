//! Results other tools read, one file per format (as hyperfine's `export`):
//! `csv` lines up under redis-benchmark's `--csv`, `hgrm` writes the
//! HdrHistogram percentile-distribution text that HdrHistogram's plotters
//! read. Both only format what a run measured; the tables people read are
//! the caller's.
//!
//! May import: histogram.

pub mod csv;
pub mod hgrm;
