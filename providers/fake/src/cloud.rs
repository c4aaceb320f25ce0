//! The fake cloud's object store, reached over HTTP: collections of JSON
//! objects with versions for optimistic concurrency.
//!
//! The host gives each call a fresh instance, so whatever must outlive a call
//! (load balancers, address claims, routes) lives there.

use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_ccm_sdk::Error;
use wasm_ccm_sdk::http::{Method, Request, Response};

/// An object read from the store.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Stored<T> {
    pub key: String,
    pub version: u64,
    pub value: T,
}

/// How a write relates to what is stored.
#[derive(Debug, Clone, Copy)]
pub enum Precondition {
    /// Only if nothing is stored under the key.
    Absent,
    /// Only if the stored object is at this version.
    Version(u64),
    /// Whatever is stored.
    None,
}

/// A client of the store at one URL.
#[derive(Debug, Clone)]
pub struct Cloud {
    url: String,
}

impl Cloud {
    pub fn new(url: &str) -> Self {
        Cloud { url: url.trim_end_matches('/').to_owned() }
    }

    fn object_url(&self, collection: &str, key: &str) -> String {
        format!("{}/v1/{collection}/{key}", self.url)
    }

    fn send(request: Request) -> Result<Response, Error> {
        Ok(request.send()?)
    }

    /// Every object of `collection`.
    pub fn list<T: DeserializeOwned>(&self, collection: &str) -> Result<Vec<Stored<T>>, Error> {
        let response = Self::send(Request::get(format!("{}/v1/{collection}", self.url)))?;
        response.error_for_status()?.json()
    }

    /// The object `key` of `collection`, if any.
    pub fn get<T: DeserializeOwned>(&self, collection: &str, key: &str) -> Result<Option<Stored<T>>, Error> {
        let response = Self::send(Request::get(self.object_url(collection, key)))?;
        if response.status() == 404 {
            return Ok(None);
        }
        response.error_for_status()?.json().map(Some)
    }

    /// Writes `value` under `key`; `Ok(false)` when the precondition failed.
    pub fn put<T: Serialize>(
        &self,
        collection: &str,
        key: &str,
        value: &T,
        precondition: Precondition,
    ) -> Result<bool, Error> {
        let mut request = Request::put(self.object_url(collection, key)).json(value)?;
        request = match precondition {
            Precondition::Absent => request.header("if-none-match", "*"),
            Precondition::Version(version) => request.header("if-match", version.to_string()),
            Precondition::None => request,
        };
        let response = Self::send(request)?;
        if response.status() == 412 {
            return Ok(false);
        }
        response.error_for_status()?;
        Ok(true)
    }

    /// Deletes `key`; `Ok(false)` when it was not there.
    pub fn delete(&self, collection: &str, key: &str) -> Result<bool, Error> {
        let response = Self::send(Request::new(Method::Delete, self.object_url(collection, key)))?;
        if response.status() == 404 {
            return Ok(false);
        }
        response.error_for_status()?;
        Ok(true)
    }
}
