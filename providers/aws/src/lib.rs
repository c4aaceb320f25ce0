//! The AWS provider.
