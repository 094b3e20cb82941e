//! Imports `test:unprovided/vault`, which no carapace provides.

wit_bindgen::generate!({
    world: "typed-unprovided",
    path: "wit",
});

struct Unprovided;

impl Guest for Unprovided {
    fn ping() -> u32 {
        test::unprovided::vault::open("x")
    }
}

export!(Unprovided);
