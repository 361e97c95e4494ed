//! `delegate_to_agent` guards (CONTRACT §11.9), checked in order before the nested run,
//! which the JS side performs (`team.runDelegatedAgent`, `team.sharedMemory.set`).

/// What the guards look at, extracted from the tool context by the JS side.
pub struct DelegateCheck<'a> {
    pub has_runner: bool,
    pub caller: &'a str,
    pub target: &'a str,
    pub agents: &'a [String],
    pub chain: &'a [String],
    pub depth: f64,
    pub max_depth: f64,
    /// `team.delegationPool.availableRunSlots` when a pool is defined.
    pub available_slots: Option<f64>,
}

/// JS `String(number)` for the integral values these fields hold.
fn js_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// The first failing guard's text, or `None` when the delegation may proceed.
pub fn check_delegation(c: &DelegateCheck) -> Option<String> {
    if !c.has_runner {
        return Some("delegate_to_agent is only available during orchestrated team runs with the delegation tool enabled. Use SharedMemory or explicit tasks instead.".to_string());
    }
    if c.target == c.caller {
        return Some("Cannot delegate to yourself; use another team member.".to_string());
    }
    if !c.agents.iter().any(|a| a == c.target) {
        return Some(format!("Unknown agent \"{}\". Roster: {}", c.target, c.agents.join(", ")));
    }
    if c.chain.iter().any(|a| a == c.target) {
        let mut path: Vec<&str> = c.chain.iter().map(String::as_str).collect();
        path.push(c.target);
        return Some(format!(
            "Delegation cycle detected: {}. Pick a different target or restructure the plan.",
            path.join(" -> ")
        ));
    }
    if c.depth >= c.max_depth {
        return Some(format!(
            "Maximum delegation depth ({}) reached; cannot delegate further.",
            js_number(c.max_depth)
        ));
    }
    if c.available_slots.is_some_and(|s| s < 1.0) {
        return Some("Agent pool has no free concurrency slot for a delegated run (nested run would block indefinitely). Increase orchestrator maxConcurrency, wait for parallel work to finish, or avoid delegating while the pool is saturated.".to_string());
    }
    None
}

/// `team.maxDelegationDepth` when the team does not set it.
pub const DEFAULT_MAX_DEPTH: u32 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_in_order() {
        let agents = vec!["a".to_string(), "b".to_string()];
        let chain = vec!["x".to_string(), "b".to_string()];
        let base = DelegateCheck {
            has_runner: true,
            caller: "a",
            target: "b",
            agents: &agents,
            chain: &[],
            depth: 0.0,
            max_depth: 3.0,
            available_slots: None,
        };
        assert_eq!(check_delegation(&base), None);
        assert!(check_delegation(&DelegateCheck { has_runner: false, target: "a", ..base.clone_shallow() })
            .unwrap()
            .starts_with("delegate_to_agent is only"));
        assert_eq!(
            check_delegation(&DelegateCheck { target: "a", ..base.clone_shallow() }).unwrap(),
            "Cannot delegate to yourself; use another team member."
        );
        assert_eq!(
            check_delegation(&DelegateCheck { target: "z", ..base.clone_shallow() }).unwrap(),
            "Unknown agent \"z\". Roster: a, b"
        );
        assert_eq!(
            check_delegation(&DelegateCheck { chain: &chain, ..base.clone_shallow() }).unwrap(),
            "Delegation cycle detected: x -> b -> b. Pick a different target or restructure the plan."
        );
        assert_eq!(
            check_delegation(&DelegateCheck { depth: 3.0, ..base.clone_shallow() }).unwrap(),
            "Maximum delegation depth (3) reached; cannot delegate further."
        );
        assert!(check_delegation(&DelegateCheck { available_slots: Some(0.0), ..base.clone_shallow() })
            .unwrap()
            .starts_with("Agent pool has no free"));
        assert_eq!(check_delegation(&DelegateCheck { available_slots: Some(1.0), ..base.clone_shallow() }), None);
    }

    impl<'a> DelegateCheck<'a> {
        fn clone_shallow(&self) -> DelegateCheck<'a> {
            DelegateCheck { agents: self.agents, chain: self.chain, ..*self }
        }
    }
}
