//! ToolRegistry (the seed's §6.3, upstream `tool/framework.ts`; CONTRACT §8.2): the name table's
//! rules. The table itself holds the user's JS tool objects and lives in the JS shim
//! (lib/tools.js), which reads the facts off the object in the order of [`Refusal::ALL`]; what
//! a registration is refused for, whether that is a `TypeError` or an `Error`, and every text,
//! are defined here once. The grant rules that read the registry's names and runtime flags are
//! `kernel::grants` (the seed puts them in the AgentRunner).
//!
//! Only the duplicate name is 1.7.0's own check and text; the others are this kernel's (a
//! malformed tool would otherwise fail later, inside a run, with a less useful error).

/// Why `register` refused a tool, in the order the checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The tool is not an object (`null`, a primitive).
    NotObject,
    /// `name` is not a non-empty string.
    NoName,
    /// `execute` is not a function.
    NoExecute,
    /// No `inputSchema` object (a Zod schema or a JSON Schema).
    NoInputSchema,
    /// A tool of that name is registered (CONTRACT §8.2).
    Duplicate,
    /// A plain JSON Schema the native validator cannot compile.
    InvalidInputSchema,
}

impl Refusal {
    /// Every refusal, in check order.
    pub const ALL: [Refusal; 6] = [
        Refusal::NotObject,
        Refusal::NoName,
        Refusal::NoExecute,
        Refusal::NoInputSchema,
        Refusal::Duplicate,
        Refusal::InvalidInputSchema,
    ];

    /// The name the JS shim asks for a refusal by.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::NotObject => "NOT_OBJECT",
            Refusal::NoName => "NO_NAME",
            Refusal::NoExecute => "NO_EXECUTE",
            Refusal::NoInputSchema => "NO_INPUT_SCHEMA",
            Refusal::Duplicate => "DUPLICATE",
            Refusal::InvalidInputSchema => "INVALID_INPUT_SCHEMA",
        }
    }

    pub fn from_name(name: &str) -> Option<Refusal> {
        Refusal::ALL.into_iter().find(|r| r.name() == name)
    }

    /// A `TypeError` (the value has the wrong shape) or a plain `Error` (a well-formed tool the
    /// table cannot take: 1.7.0 throws `Error` for a duplicate).
    pub fn is_type_error(self) -> bool {
        self != Refusal::Duplicate
    }

    /// The thrown message. `name`: the tool's name (unused before it is known); `detail`: the
    /// validator's compile error for [`Refusal::InvalidInputSchema`].
    pub fn message(self, name: &str, detail: &str) -> String {
        match self {
            Refusal::NotObject => {
                "ToolRegistry: a tool must be an object with name, description, inputSchema and execute".to_string()
            }
            Refusal::NoName => "ToolRegistry: a tool must have a non-empty string \"name\"".to_string(),
            Refusal::NoExecute => format!("ToolRegistry: tool \"{name}\" must have an \"execute\" function"),
            Refusal::NoInputSchema => format!(
                "ToolRegistry: tool \"{name}\" must have an \"inputSchema\" (a Zod schema or a JSON Schema object)"
            ),
            Refusal::Duplicate => format!(
                "ToolRegistry: a tool named \"{name}\" is already registered. Use a unique name or deregister the existing one first."
            ),
            Refusal::InvalidInputSchema => format!("ToolRegistry: tool \"{name}\" has an invalid inputSchema: {detail}"),
        }
    }
}

/// The rail of `new ToolRegistry({ disallow })` (beyond the original, issue 19): names that no
/// agent using the registry is granted, whatever its `tools`, `toolPreset` or a runtime
/// registration say (`kernel::grants` refuses them with a warning, the executor with the
/// not-granted text). The original's constructor takes no argument: without one there is no rail.
///
/// `options_kind` / `disallow_kind`: what the values are (`typeof`, or `"null"` / `"array"`);
/// `names`: the entries of an array `disallow`, `None` for an entry that is not a string. The
/// names, without repeats, in the order given; or the `TypeError`'s message.
pub fn rail(options_kind: &str, disallow_kind: &str, names: Option<&[Option<String>]>) -> Result<Vec<String>, String> {
    let article = |kind: &str| match kind {
        "null" | "undefined" => kind.to_string(),
        k if k.starts_with(['a', 'e', 'i', 'o', 'u']) => format!("an {k}"),
        k => format!("a {k}"),
    };
    match options_kind {
        "undefined" => return Ok(Vec::new()),
        "object" => {}
        other => {
            return Err(format!(
                "ToolRegistry: the options must be an object such as {{ disallow: ['bash'] }}, got {}",
                article(other)
            ))
        }
    }
    let names = match (disallow_kind, names) {
        ("undefined", _) => return Ok(Vec::new()),
        ("array", Some(names)) => names,
        (other, _) => {
            return Err(format!(
                "ToolRegistry: options.disallow must be an array of tool names, got {}",
                article(other)
            ))
        }
    };
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for (i, n) in names.iter().enumerate() {
        match n {
            Some(n) if !n.is_empty() => {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
            _ => {
                return Err(format!(
                    "ToolRegistry: options.disallow must hold non-empty tool names; entry {i} is not one"
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rails_and_their_errors() {
        let s = |v: &[&str]| v.iter().map(|n| Some(n.to_string())).collect::<Vec<_>>();
        assert_eq!(rail("undefined", "undefined", None), Ok(vec![]));
        assert_eq!(rail("object", "undefined", None), Ok(vec![]));
        assert_eq!(rail("object", "array", Some(&s(&[]))), Ok(vec![]));
        assert_eq!(
            rail("object", "array", Some(&s(&["bash", "grep", "bash"]))),
            Ok(vec!["bash".into(), "grep".into()])
        );
        assert_eq!(
            rail("number", "undefined", None).unwrap_err(),
            "ToolRegistry: the options must be an object such as { disallow: ['bash'] }, got a number"
        );
        assert_eq!(
            rail("null", "undefined", None).unwrap_err(),
            "ToolRegistry: the options must be an object such as { disallow: ['bash'] }, got null"
        );
        assert!(rail("array", "undefined", None).unwrap_err().ends_with("got an array"));
        assert_eq!(
            rail("object", "string", None).unwrap_err(),
            "ToolRegistry: options.disallow must be an array of tool names, got a string"
        );
        assert!(rail("object", "null", None).unwrap_err().ends_with("got null"));
        assert_eq!(
            rail("object", "array", Some(&[Some("bash".into()), None])).unwrap_err(),
            "ToolRegistry: options.disallow must hold non-empty tool names; entry 1 is not one"
        );
        assert!(rail("object", "array", Some(&s(&[""]))).unwrap_err().ends_with("entry 0 is not one"));
    }

    #[test]
    fn names_round_trip_and_are_distinct() {
        for r in Refusal::ALL {
            assert_eq!(Refusal::from_name(r.name()), Some(r));
        }
        assert_eq!(Refusal::from_name("nope"), None);
    }

    #[test]
    fn texts() {
        // CONTRACT §8.2's text, byte for byte, and an Error, not a TypeError.
        assert_eq!(
            Refusal::Duplicate.message("echo", ""),
            "ToolRegistry: a tool named \"echo\" is already registered. Use a unique name or deregister the existing one first."
        );
        assert!(!Refusal::Duplicate.is_type_error());
        assert_eq!(
            Refusal::InvalidInputSchema.message("x", "bad type"),
            "ToolRegistry: tool \"x\" has an invalid inputSchema: bad type"
        );
        assert!(Refusal::ALL.iter().filter(|r| r.is_type_error()).count() == 5);
        for r in Refusal::ALL {
            assert!(r.message("n", "d").starts_with("ToolRegistry: "), "{r:?}");
        }
    }
}
