//! napi binding of the confined shell (`ConfinedShellExecutor`, lib/confined-shell.js): the
//! options' check, a started shell (its temp dir and prepared policies), its exec on the
//! blocking pool. The rules and texts are oma-core's (`tool::builtin::confined`).

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::cancel::CancelHandle;
use oma_core::tool::builtin::confined::{self, ExecRequest};

fn described(json: &str) -> Result<serde_json::Value> {
    serde_json::from_str(json).map_err(|e| Error::from_reason(format!("bad options description: {e}")))
}

/// `null`, or `[errorClassName, message]` for options the constructor refuses.
#[napi(catch_unwind)]
pub fn confined_shell_check(options: String) -> Result<Option<Vec<String>>> {
    Ok(confined::check_options(&described(&options)?).err().map(|(c, m)| vec![c.name().to_string(), m]))
}

/// `ConfinedShellExecutor.probe()`.
// A napi object, not a record: `probe()`'s result, handed to the user as it is (once per call).
#[napi(object)]
pub struct ConfinedShellProbe {
    pub platform: String,
    pub landlock_abi: i32,
    pub required_landlock_abi: i32,
}

#[napi(catch_unwind)]
pub fn confined_shell_probe() -> ConfinedShellProbe {
    ConfinedShellProbe {
        platform: std::env::consts::OS.to_string(),
        landlock_abi: confined::landlock_abi(),
        required_landlock_abi: confined::REQUIRED_LANDLOCK_ABI,
    }
}

#[napi(catch_unwind)]
pub fn confined_shell_warning(missing: Vec<String>) -> String {
    confined::partial_warning(&missing)
}

// A napi object, not a record: `exec` reads its fields by name into the user's result.
#[napi(object)]
pub struct NativeConfinedResult {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
    pub missing: Vec<String>,
    pub landlock_abi: i32,
}

/// A started confined shell (one per `start()`; `dispose()` removes its temp dir).
#[napi]
pub struct ConfinedShell {
    inner: Arc<confined::ConfinedShell>,
}

#[napi]
impl ConfinedShell {
    /// `options`: the description `confinedShellCheck` accepted. Throws off Linux.
    #[napi(constructor, catch_unwind)]
    pub fn new(options: String) -> Result<Self> {
        let opts = confined::check_options(&described(&options)?).map_err(|(_, m)| Error::from_reason(m))?;
        let inner = confined::ConfinedShell::start(opts).map_err(Error::from_reason)?;
        Ok(ConfinedShell { inner: Arc::new(inner) })
    }

    #[napi(getter)]
    pub fn temp_dir(&self) -> String {
        self.inner.temp_dir().to_string_lossy().into_owned()
    }

    /// Rejects when nothing ran (no sandbox root, a cwd outside it, a policy the kernel cannot
    /// enforce with `required`). `host_env`: `[name, value]` pairs of the allowlisted names.
    #[allow(clippy::too_many_arguments)]
    #[napi(catch_unwind)]
    pub fn exec<'env>(
        &self,
        env: &'env Env,
        command: String,
        timeout_ms: f64,
        cwd: Option<String>,
        sandbox_root: Option<String>,
        process_cwd: String,
        host_env: Vec<Vec<String>>,
        cancel: &CancelHandle,
    ) -> Result<PromiseRaw<'env, NativeConfinedResult>> {
        let token = cancel.token();
        let shell = self.inner.clone();
        let env_pairs = host_env
            .into_iter()
            .filter_map(|kv| match <[String; 2]>::try_from(kv) {
                Ok([k, v]) => Some((k, v)),
                Err(_) => None,
            })
            .collect();
        let req = ExecRequest {
            command,
            timeout_ms: timeout_ms.max(1.0) as u64,
            cwd,
            sandbox_root,
            process_cwd,
            env: env_pairs,
        };
        env.spawn_future(async move {
            let r = tokio::task::spawn_blocking(move || shell.exec(req, &|| token.is_cancelled()))
                .await
                .map_err(|e| Error::from_reason(format!("native tool failed: {e}")))?
                .map_err(Error::from_reason)?;
            Ok(NativeConfinedResult {
                stdout: r.raw.stdout,
                stderr: r.raw.stderr,
                exit_code: r.raw.exit_code,
                missing: r.missing,
                landlock_abi: r.landlock_abi,
            })
        })
    }

    #[napi(catch_unwind)]
    pub fn dispose(&self) -> Result<()> {
        self.inner.dispose().map_err(Error::from_reason)
    }
}
