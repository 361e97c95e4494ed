//! Tool resolution (CONTRACT §5.7): default deny for built-ins, preset → allowlist →
//! denylist → framework rail; runtime-added tools bypass everything but the denylist.

/// A JS option that distinguishes `undefined` from a defined-but-falsy value (`null`, `''`).
#[derive(Debug, Clone, PartialEq)]
pub enum Opt<T> {
    Undefined,
    Falsy,
    Set(T),
}

impl<T> Opt<T> {
    fn truthy(&self) -> Option<&T> {
        match self {
            Opt::Set(v) => Some(v),
            _ => None,
        }
    }
}

/// The tool presets (`TOOL_PRESETS`, which `index.js` reads from here through the binding).
pub const PRESETS: &[(&str, &[&str])] = &[
    ("readonly", &["file_read", "grep", "glob"]),
    ("readwrite", &["file_read", "file_write", "file_edit", "grep", "glob"]),
    ("full", &["file_read", "file_write", "file_edit", "grep", "glob", "bash"]),
];
/// Reserved by the framework; empty in 1.7.0.
pub const AGENT_FRAMEWORK_DISALLOWED: &[&str] = &[];

pub fn preset_tools(name: &str) -> Option<&'static [&'static str]> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, tools)| *tools)
}

#[derive(Debug, Clone)]
pub struct GrantConfig {
    pub tool_preset: Opt<String>,
    pub allowed: Opt<Vec<String>>,
    pub disallowed: Opt<Vec<String>>,
}

pub struct Resolved {
    pub names: Vec<String>,
    pub warnings: Vec<String>,
}

/// `tools`: every registered tool in registration order with its runtime flag.
pub fn resolve_tools(cfg: &GrantConfig, tools: &[(&str, bool)]) -> Resolved {
    resolve_tools_railed(cfg, tools, &[])
}

/// The warning for names a registry's rail (`tool::registry::rail`) took away from an agent
/// that would otherwise have been granted them, in registry order.
pub fn railed_warning(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    format!(
        "AgentRunner: tools [{}] are disallowed by the tool registry (new ToolRegistry({{ disallow }})) and are not granted to this agent, whatever its tools, toolPreset or runtime registration say.",
        quoted.join(", ")
    )
}

/// [`resolve_tools`] under a registry's rail (beyond the original): a name on `rail` is never
/// granted, built-in or runtime; one that the rest of the algorithm would have granted is
/// named in a warning. An empty rail is the original's algorithm.
pub fn resolve_tools_railed(cfg: &GrantConfig, tools: &[(&str, bool)], rail: &[String]) -> Resolved {
    let mut warnings = Vec::new();
    let preset = cfg.tool_preset.truthy();
    let allowed = cfg.allowed.truthy();
    let disallowed = cfg.disallowed.truthy();
    if preset.is_some() && allowed.is_some() {
        warnings.push(
            "AgentRunner: both toolPreset and allowedTools are set. Final tool access will be the intersection of both."
                .to_string(),
        );
    }
    if let (Some(a), Some(d)) = (allowed, disallowed) {
        let both: Vec<String> = a.iter().filter(|n| d.contains(n)).map(|n| format!("\"{n}\"")).collect();
        if !both.is_empty() {
            warnings.push(format!(
                "AgentRunner: tools [{}] appear in both allowedTools and disallowedTools. This is contradictory and may lead to unexpected behavior.",
                both.join(", ")
            ));
        }
    }
    let denied = |n: &str| disallowed.is_some_and(|d| d.iter().any(|x| x == n));
    let default_deny = cfg.tool_preset == Opt::Undefined && cfg.allowed == Opt::Undefined;
    let on_rail = |n: &str| !rail.is_empty() && rail.iter().any(|x| x == n);
    let mut railed: Vec<&str> = Vec::new();
    let mut names = Vec::new();
    if !default_deny {
        for (name, runtime) in tools {
            if *runtime {
                continue;
            }
            if let Some(p) = preset {
                if !preset_tools(p).is_some_and(|list| list.contains(name)) {
                    continue;
                }
            }
            if let Some(a) = allowed {
                if !a.iter().any(|x| x == name) {
                    continue;
                }
            }
            if denied(name) || AGENT_FRAMEWORK_DISALLOWED.contains(name) {
                continue;
            }
            if on_rail(name) {
                railed.push(name);
                continue;
            }
            names.push(name.to_string());
        }
    }
    for (name, runtime) in tools {
        if *runtime && !denied(name) {
            if on_rail(name) {
                railed.push(name);
                continue;
            }
            names.push(name.to_string());
        }
    }
    if !railed.is_empty() {
        warnings.push(railed_warning(&railed));
    }
    Resolved { names, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[(&str, bool)] =
        &[("bash", false), ("file_read", false), ("grep", false), ("custom", false), ("rt", true)];

    fn cfg(p: Opt<&str>, a: Opt<&[&str]>, d: Opt<&[&str]>) -> GrantConfig {
        let l = |o: Opt<&[&str]>| match o {
            Opt::Set(v) => Opt::Set(v.iter().map(|s| s.to_string()).collect()),
            Opt::Falsy => Opt::Falsy,
            Opt::Undefined => Opt::Undefined,
        };
        GrantConfig {
            tool_preset: match p {
                Opt::Set(s) => Opt::Set(s.to_string()),
                Opt::Falsy => Opt::Falsy,
                Opt::Undefined => Opt::Undefined,
            },
            allowed: l(a),
            disallowed: l(d),
        }
    }

    #[test]
    fn default_deny_keeps_only_runtime_tools() {
        let r = resolve_tools(&cfg(Opt::Undefined, Opt::Undefined, Opt::Undefined), TOOLS);
        assert_eq!(r.names, vec!["rt"]);
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn preset_allowlist_intersection_and_warnings() {
        let r = resolve_tools(&cfg(Opt::Set("readonly"), Opt::Set(&["grep", "bash"]), Opt::Undefined), TOOLS);
        assert_eq!(r.names, vec!["grep", "rt"]);
        assert_eq!(r.warnings.len(), 1);
        let r =
            resolve_tools(&cfg(Opt::Undefined, Opt::Set(&["bash", "grep", "rt"]), Opt::Set(&["grep", "rt"])), TOOLS);
        assert_eq!(r.names, vec!["bash"]);
        assert_eq!(
            r.warnings,
            vec!["AgentRunner: tools [\"grep\", \"rt\"] appear in both allowedTools and disallowedTools. This is contradictory and may lead to unexpected behavior."]
        );
    }

    #[test]
    fn falsy_but_defined_grants_everything() {
        let r = resolve_tools(&cfg(Opt::Falsy, Opt::Undefined, Opt::Undefined), TOOLS);
        assert_eq!(r.names, vec!["bash", "file_read", "grep", "custom", "rt"]);
        let r = resolve_tools(&cfg(Opt::Undefined, Opt::Set(&[]), Opt::Undefined), TOOLS);
        assert_eq!(r.names, vec!["rt"]);
    }

    #[test]
    fn a_registry_rail_is_never_granted_and_warns_only_for_what_it_took() {
        let rail = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // `full` plus an explicit grant of bash, bash on the rail: not granted, one warning.
        let r = resolve_tools_railed(
            &cfg(Opt::Set("full"), Opt::Set(&["bash", "file_read"]), Opt::Undefined),
            TOOLS,
            &rail(&["bash"]),
        );
        assert_eq!(r.names, vec!["file_read", "rt"]);
        assert_eq!(r.warnings.len(), 2);
        assert_eq!(
            r.warnings[1],
            "AgentRunner: tools [\"bash\"] are disallowed by the tool registry (new ToolRegistry({ disallow })) and are not granted to this agent, whatever its tools, toolPreset or runtime registration say."
        );
        // Runtime tools too; a name the agent was not granted anyway makes no warning.
        let r = resolve_tools_railed(
            &cfg(Opt::Set("readonly"), Opt::Undefined, Opt::Undefined),
            TOOLS,
            &rail(&["rt", "bash", "custom"]),
        );
        assert_eq!(r.names, vec!["file_read", "grep"]);
        assert_eq!(r.warnings, vec![railed_warning(&["rt"])]);
        // Default deny: only the runtime tool would have been granted.
        let r = resolve_tools_railed(&cfg(Opt::Undefined, Opt::Undefined, Opt::Undefined), TOOLS, &rail(&["rt"]));
        assert!(r.names.is_empty());
        assert_eq!(r.warnings, vec![railed_warning(&["rt"])]);
        // A name the agent's own denylist already drops is not the rail's doing.
        let r = resolve_tools_railed(
            &cfg(Opt::Falsy, Opt::Undefined, Opt::Set(&["bash", "rt"])),
            TOOLS,
            &rail(&["bash", "rt"]),
        );
        assert_eq!(r.names, vec!["file_read", "grep", "custom"]);
        assert!(r.warnings.is_empty());
        // Everything but the rail: the original's algorithm.
        let c = cfg(Opt::Falsy, Opt::Undefined, Opt::Undefined);
        assert_eq!(resolve_tools_railed(&c, TOOLS, &[]).names, resolve_tools(&c, TOOLS).names);
        let r = resolve_tools_railed(&c, TOOLS, &rail(&["bash", "grep"]));
        assert_eq!(r.names, vec!["file_read", "custom", "rt"]);
        assert_eq!(r.warnings, vec![railed_warning(&["bash", "grep"])]);
    }

    #[test]
    fn full_preset_and_denylist() {
        let r = resolve_tools(&cfg(Opt::Set("full"), Opt::Undefined, Opt::Set(&["bash"])), TOOLS);
        assert_eq!(r.names, vec!["file_read", "grep", "rt"]);
    }
}
