//! Requests of the AWS Query protocol: an action and its parameters, encoded
//! as an `application/x-www-form-urlencoded` body.

/// The parameters of one Query API call, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    params: Vec<(String, String)>,
}

impl Query {
    /// A call of `action`; the API version is added when it is sent.
    pub fn new(action: &str) -> Self {
        Query { params: vec![("Action".to_owned(), action.to_owned())] }
    }

    /// The action's name.
    pub fn action(&self) -> &str {
        &self.params[0].1
    }

    /// Adds a parameter.
    pub fn param(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.push((name.into(), value.into()));
        self
    }

    /// Adds a parameter when `value` is set.
    pub fn optional(self, name: &str, value: Option<impl Into<String>>) -> Self {
        match value {
            Some(value) => self.param(name, value),
            None => self,
        }
    }

    /// Adds a list as `<prefix>.1`, `<prefix>.2`, …: EC2 lists are
    /// `InstanceId.1`, ELBv2 lists `Names.member.1`.
    pub fn list<I, V>(mut self, prefix: &str, values: I) -> Self
    where
        I: IntoIterator<Item = V>,
        V: Into<String>,
    {
        for (index, value) in values.into_iter().enumerate() {
            self = self.param(format!("{prefix}.{}", index + 1), value);
        }
        self
    }

    /// Adds an EC2 filter as `Filter.<n>.Name` and `Filter.<n>.Value.<m>`.
    pub fn filter<I, V>(self, name: &str, values: I) -> Self
    where
        I: IntoIterator<Item = V>,
        V: Into<String>,
    {
        let index = self.params.iter().filter(|(key, _)| key.starts_with("Filter.") && key.ends_with(".Name")).count();
        let prefix = format!("Filter.{}", index + 1);
        self.param(format!("{prefix}.Name"), name).list(&format!("{prefix}.Value"), values)
    }

    /// Adds ELBv2 tags as `Tags.member.<n>.Key` and `Tags.member.<n>.Value`.
    pub fn tags<'a>(mut self, tags: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        for (index, (key, value)) in tags.into_iter().enumerate() {
            let prefix = format!("Tags.member.{}", index + 1);
            self = self.param(format!("{prefix}.Key"), key).param(format!("{prefix}.Value"), value);
        }
        self
    }

    /// The form body with `Version` added after the action.
    pub fn encode(&self, version: &str) -> String {
        let mut body = String::new();
        let version = ("Version".to_owned(), version.to_owned());
        let params = self.params[..1].iter().chain(std::iter::once(&version)).chain(&self.params[1..]);
        for (index, (name, value)) in params.enumerate() {
            if index > 0 {
                body.push('&');
            }
            percent_encode(name, &mut body);
            body.push('=');
            percent_encode(value, &mut body);
        }
        body
    }
}

/// Appends `text` with every byte but RFC 3986's unreserved characters
/// percent-encoded, as AWS expects.
fn percent_encode(text: &str, out: &mut String) {
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_action_version_and_parameters_in_order() {
        let query = Query::new("DescribeInstances").param("MaxResults", "5").optional("NextToken", None::<String>);
        assert_eq!(query.action(), "DescribeInstances");
        assert_eq!(query.encode("2016-11-15"), "Action=DescribeInstances&Version=2016-11-15&MaxResults=5");
    }

    #[test]
    fn percent_encodes_reserved_and_non_ascii_bytes() {
        let body = Query::new("X").param("Value", "a b/c=d&e~f*g+h:é").encode("1");
        assert_eq!(body, "Action=X&Version=1&Value=a%20b%2Fc%3Dd%26e~f%2Ag%2Bh%3A%C3%A9");
    }

    #[test]
    fn numbers_lists_filters_and_tags() {
        let body = Query::new("X")
            .list("InstanceId", ["i-1", "i-2"])
            .filter("private-dns-name", ["a", "b"])
            .filter("instance-state-name", ["running"])
            .tags([("k1", "v1"), ("k2", "v2")])
            .encode("1");
        assert_eq!(
            body,
            "Action=X&Version=1&InstanceId.1=i-1&InstanceId.2=i-2\
             &Filter.1.Name=private-dns-name&Filter.1.Value.1=a&Filter.1.Value.2=b\
             &Filter.2.Name=instance-state-name&Filter.2.Value.1=running\
             &Tags.member.1.Key=k1&Tags.member.1.Value=v1&Tags.member.2.Key=k2&Tags.member.2.Value=v2"
        );
    }
}
