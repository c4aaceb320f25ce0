//! Free ports on loopback.

use std::net::{Ipv4Addr, TcpListener};

/// A free TCP port on loopback: free when asked; a server started on it
/// later may still lose it to another process.
///
/// # Errors
/// When no port can be bound.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port())
}
