//! Results other tools read, one file per format (as hyperfine's `export`):
//! `csv` lines up under redis-benchmark's `--csv` and `hgrm` writes the
//! HdrHistogram percentile-distribution text that HdrHistogram's plotters read.
//! Both only format what `report`/`measure` computed.

pub mod csv;
pub mod hgrm;
