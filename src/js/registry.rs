//! napi binding of the ToolRegistry's rules (`oma_core::tool::registry`). lib/tools.js reads
//! the facts off the user's tool object and calls this only when a check failed, so a
//! registration that passes makes no native call for its checks.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use oma_core::tool::registry::{rail, Refusal};

/// The error `register` throws for the refusal named `kind` (a [`Refusal::name`]).
// A napi object, not a record: read by name on an error path.
#[napi(object)]
pub struct RegistryRefusal {
    /// `true`: a `TypeError`; `false`: an `Error`.
    pub type_error: bool,
    pub message: String,
}

#[napi(catch_unwind)]
pub fn registry_refusal(kind: String, name: Option<String>, detail: Option<String>) -> Result<RegistryRefusal> {
    let refusal = Refusal::from_name(&kind)
        .ok_or_else(|| Error::new(Status::InvalidArg, format!("registryRefusal: unknown refusal {kind:?}")))?;
    Ok(RegistryRefusal {
        type_error: refusal.is_type_error(),
        message: refusal.message(name.as_deref().unwrap_or(""), detail.as_deref().unwrap_or("")),
    })
}

/// The rail of `new ToolRegistry(options)`: its names, or the `TypeError`'s message. Called once
/// per registry made with options; `lib/tools.js` describes the values (see `registry::rail`).
// A napi object, not a record: read by name, once per registry.
#[napi(object)]
pub struct RegistryRail {
    pub names: Option<Vec<String>>,
    pub error: Option<String>,
}

#[napi(catch_unwind)]
pub fn registry_rail(options_kind: String, disallow_kind: String, names: Option<Vec<Option<String>>>) -> RegistryRail {
    match rail(&options_kind, &disallow_kind, names.as_deref()) {
        Ok(names) => RegistryRail { names: Some(names), error: None },
        Err(e) => RegistryRail { names: None, error: Some(e) },
    }
}
