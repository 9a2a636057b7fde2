//! Results other tools read, one file per format (as hyperfine's `export`):
//! `csv` lines up under redis-benchmark's `--csv` and `hgrm` writes the
//! HdrHistogram percentile-distribution text that HdrHistogram's plotters read.
//! `table` is what people read. All of them only format what
//! `report`/`measure` computed.

pub(crate) mod csv;
pub(crate) mod hgrm;
pub(crate) mod table;
