//! `pi session append`

use crate::common::*;

#[test]
fn bare_messages_are_wrapped_and_chained() {
    let w = World::new();
    let s = w.new_session();
    let out = w.ok_in(
        &["session", "append"],
        &format!("{}\n{}\n", user("hi"), assistant("yo")),
    );
    let recs = jsonl(&out);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["type"], "message");
    assert_eq!(recs[0]["parentId"], serde_json::Value::Null);
    assert_eq!(recs[1]["parentId"], recs[0]["id"]);
    let file = std::fs::read_to_string(&s).unwrap();
    assert_eq!(file.lines().count(), 3);
    assert_eq!(file.lines().nth(2).unwrap(), out.lines().nth(1).unwrap());
}
