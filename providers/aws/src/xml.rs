//! The shapes AWS Query API answers share: EC2's `<item>` lists, ELBv2's
//! `<member>` lists, and ELBv2's `<…Result>` envelope.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// EC2's `<item>` lists.
#[derive(Debug, Clone, Deserialize)]
pub struct Items<T> {
    /// The elements.
    #[serde(rename = "item", default = "Vec::new")]
    pub items: Vec<T>,
}

impl<T> Default for Items<T> {
    fn default() -> Self {
        Items { items: Vec::new() }
    }
}

/// ELBv2's `<member>` lists.
#[derive(Debug, Clone, Deserialize)]
pub struct Members<T> {
    /// The elements.
    #[serde(rename = "member", default = "Vec::new")]
    pub members: Vec<T>,
}

impl<T> Default for Members<T> {
    fn default() -> Self {
        Members { members: Vec::new() }
    }
}

/// The `<…Result>` element of an answer, whatever the action.
pub struct Answer<T>(pub T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Answer<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ResultVisitor<T>(PhantomData<T>);

        impl<'de, T: DeserializeOwned> Visitor<'de> for ResultVisitor<T> {
            type Value = Answer<T>;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("an ELBv2 answer with a result element")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut result = None;
                while let Some(key) = map.next_key::<String>()? {
                    if result.is_none() && key.ends_with("Result") {
                        result = Some(map.next_value::<T>()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                result.map(Answer).ok_or_else(|| serde::de::Error::missing_field("…Result"))
            }
        }

        deserializer.deserialize_map(ResultVisitor(PhantomData))
    }
}
