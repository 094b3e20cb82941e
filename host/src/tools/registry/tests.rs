use super::valid_tool_name;

#[test]
fn tool_names_follow_the_api_rules() {
    for ok in ["Read", "mcp__srv__tool", "a-b", &"x".repeat(64)] {
        assert!(valid_tool_name(ok), "{ok}");
    }
    for bad in ["", "1abc", "a b", "naïve", &"x".repeat(65), "_x"] {
        assert!(!valid_tool_name(bad), "{bad}");
    }
}
