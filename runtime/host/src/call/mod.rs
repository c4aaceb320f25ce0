//! What a call goes through: admission at its provider's rate and
//! concurrency, the conversion of its arguments and results, the epoch
//! ticks of its deadline, its share of the CPU, and the usage it adds to.

pub(crate) mod admission;
pub(crate) mod compute;
pub(crate) mod convert;
pub(crate) mod epoch;
pub(crate) mod throttle;
pub(crate) mod usage;
