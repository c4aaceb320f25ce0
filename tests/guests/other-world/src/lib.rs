//! A component of another world, which the host must refuse to load.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failure stops the test that met it"
)]
#![allow(missing_docs, unsafe_code)]

wit_bindgen::generate!({
    inline: "
        package test:other-world;

        world greeter {
            export greet: func(name: string) -> string;
        }
    ",
});

struct Greeter;

impl Guest for Greeter {
    fn greet(name: String) -> String {
        format!("hello, {name}")
    }
}

export!(Greeter);
