fn main() {
    // napi's link setup for the addon (this package is the binding; the policy crates do not need it).
    napi_build::setup();
}
