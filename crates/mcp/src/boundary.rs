//! oma-mcp's part of the boundary schema (`oma_core::boundary`), rendered into
//! `lib/generated/boundary.js`. The variables a server inherits by default are the target's
//! (`stdio::DEFAULT_INHERITED_ENV_VARS` differs on Windows), so they stay a napi call.

use oma_core::boundary::Section;

use crate::{config, http};

/// The MCP client's section.
pub fn section() -> Section {
    Section::new("mcp", "crates/mcp/src/ (http.rs, config.rs)", "The MCP client's constants (lib/mcp.js).")
        .item("egressProvider", "The provider name an egress refusal gives the MCP client.", http::EGRESS_PROVIDER)
        .item(
            "configNotAnObject",
            "`connectMCPTools(config)` with a config that is no object.",
            config::CONFIG_NOT_AN_OBJECT,
        )
        .item("authTokenNotAString", "An `authToken` that is no string.", config::AUTH_TOKEN_NOT_A_STRING)
}
