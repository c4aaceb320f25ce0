//! The cloud controllers.
