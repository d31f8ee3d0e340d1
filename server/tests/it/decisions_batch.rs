//! `POST /api/approvals` with the built-in agent (issue 27): decisions across
//! folders where a stale id, a missing session or a decision repeated fails
//! alone, one session's calls decided together and resumed once without more
//! cards, and the user's decision on a call an earlier grant of the same
//! batch let go. `GET /api/approvals` before and after.

use crate::common;

use common::*;
use serde_json::{json, Value};

use super::decisions::{last_message, row, touching_model};

#[tokio::test]
async fn a_batch_decides_across_folders_and_a_stale_id_fails_alone() {
    let model = touching_model().await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_a_dir, a) = project(None);
    let (_b_dir, b) = project(None);
    let a_session = session_of(&hub.prompt(&a, "touch a1").await.lines());
    let b_paused = hub.prompt(&b, "touch b1 b2").await.lines();
    assert_eq!(b_paused.last().unwrap()["pending"], json!(["b1", "b2"]));
    let b_session = session_of(&b_paused);

    let listed = hub.get("/api/approvals").await.json()["waiting"].clone();
    let mut ids: Vec<(String, String)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|item| (item["sessionId"].as_str().unwrap().into(), item["toolId"].as_str().unwrap().into()))
        .collect();
    ids.sort();
    let mut expected =
        vec![(a_session.clone(), "a1".into()), (b_session.clone(), "b1".into()), (b_session.clone(), "b2".into())];
    expected.sort();
    assert_eq!(ids, expected, "{listed}");

    let answer = hub
        .batch(json!([
            {"sessionId": b_session, "toolId": "b1", "decision": "approve"},
            {"sessionId": a_session, "toolId": "a-stale", "decision": "approve"},
            {"sessionId": "no-such-session", "toolId": "x", "decision": "approve"},
            {"sessionId": a_session, "toolId": "a1", "decision": "approve"},
            {"sessionId": b_session, "toolId": "b2", "decision": "approve"},
            {"sessionId": a_session, "toolId": "a1", "decision": "approve"},
        ]))
        .await;
    let results: Vec<(&str, &str, bool, Option<&str>)> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["sessionId"].as_str().unwrap(),
                r["toolId"].as_str().unwrap(),
                r["ok"].as_bool().unwrap(),
                r["error"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            (b_session.as_str(), "b1", true, None),
            (a_session.as_str(), "a-stale", false, Some("not_pending")),
            ("no-such-session", "x", false, Some("not_found")),
            (a_session.as_str(), "a1", true, None),
            (b_session.as_str(), "b2", true, None),
            (a_session.as_str(), "a1", false, Some("not_pending")),
        ],
        "{answer}"
    );
    for session in [&a_session, &b_session] {
        let detail = hub.wait_status(session, "idle").await;
        let events = detail["events"].as_array().unwrap();
        let statuses: Vec<&Value> = events.iter().filter(|e| e["type"] == "result").map(|e| &e["status"]).collect();
        assert_eq!(
            statuses,
            [&json!("waiting_approval"), &json!("success")],
            "resumed once, no more cards: {events:?}"
        );
    }
    for (folder, name) in [(&a, "a1"), (&b, "b1"), (&b, "b2")] {
        let ran = std::fs::read_to_string(folder.join(format!("{name}.txt"))).unwrap_or_default();
        assert_eq!(ran, format!("{name}\n"), "{name} ran once, in its folder");
    }
    // B's two results went to the model together: one request after the batch.
    let after_tools: Vec<Value> = model.requests().into_iter().filter(|r| last_message(r).0 == "tool").collect();
    assert_eq!(after_tools.len(), 2, "one request per session after the batch");
    let audit = hub.settled_audit(&b, &["b1", "b2"]).await;
    assert_eq!(
        (row(&audit, "b1"), row(&audit, "b2")),
        (("approved", "user", Some("ran")), ("approved", "user", Some("ran")))
    );
    assert_eq!(hub.get("/api/approvals").await.json(), json!({"waiting": []}));
}

/// Two cards of one tool decided in one batch, the first "for this turn":
/// its grant would let the second run, but the user decided that one too,
/// and their decision is the one taken (each answered ok, audited as theirs).
#[tokio::test]
async fn in_a_batch_the_users_decision_on_a_call_an_earlier_grant_let_go_is_the_one_taken() {
    let model = touching_model().await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    {
        let (second, ran, audited) = ("approve_turn", ["c1\n", "c2\n"], ("approved_turn", "user", Some("ran")));
        let (_dir, folder) = project(None);
        let paused = hub.prompt(&folder, "touch c1 c2").await.lines();
        assert_eq!(paused.last().unwrap()["pending"], json!(["c1", "c2"]));
        let session = session_of(&paused);
        let answer = hub
            .batch(json!([
                {"sessionId": session, "toolId": "c1", "decision": "approve_turn"},
                {"sessionId": session, "toolId": "c2", "decision": second},
            ]))
            .await;
        let oks: Vec<&Value> = answer["results"].as_array().unwrap().iter().map(|r| &r["ok"]).collect();
        assert_eq!(oks, [&json!(true), &json!(true)], "{second}: {answer}");
        hub.wait_status(&session, "idle").await;
        for (name, ran) in ["c1", "c2"].into_iter().zip(ran) {
            let text = std::fs::read_to_string(folder.join(format!("{name}.txt"))).unwrap_or_default();
            assert_eq!(text, ran, "{second}: {name}");
        }
        let audit = hub.settled_audit(&folder, &["c2"]).await;
        assert_eq!(row(&audit, "c2"), audited, "{second}");
    }
    // A reject beside an approval of the same turn is refused whole: the
    // rejection would end the turn, and the approved call would never run.
    let (_dir, folder) = project(None);
    let paused = hub.prompt(&folder, "touch c1 c2").await.lines();
    let session = session_of(&paused);
    let answer = hub
        .batch(json!([
            {"sessionId": session, "toolId": "c1", "decision": "approve_turn"},
            {"sessionId": session, "toolId": "c2", "decision": "reject"},
        ]))
        .await;
    let errors: Vec<&Value> = answer["results"].as_array().unwrap().iter().map(|r| &r["error"]).collect();
    assert_eq!(errors, [&json!("bad_request"), &json!("bad_request")], "{answer}");
    let detail = hub.session_detail(&session).await;
    assert_eq!(detail["pendingApproval"]["pending"], json!(["c1", "c2"]), "nothing was decided: {detail}");

    // A decision names the call as the list showed it: another call under that id is not decided.
    let listed = hub.get("/api/approvals").await.json()["waiting"].clone();
    let listed_as =
        |id: &str| listed.as_array().unwrap().iter().find(|call| call["toolId"] == id).unwrap()["fingerprint"].clone();
    let seen = listed_as("c1");
    // The same tool with other arguments (c2, as listed) is another call.
    assert_ne!(listed_as("c2"), seen);
    let other = listed_as("c2");
    let stale =
        hub.batch(json!([{"sessionId": session, "toolId": "c1", "decision": "approve", "fingerprint": other}])).await;
    assert_eq!(stale["results"][0]["error"], "not_pending", "{stale}");
    assert!(stale["results"][0]["message"].as_str().unwrap().contains("changed since it was listed"), "{stale}");
    let detail = hub.session_detail(&session).await;
    assert_eq!(detail["pendingApproval"]["pending"], json!(["c1", "c2"]), "still nothing decided: {detail}");
    let fresh = hub
        .batch(json!([
            {"sessionId": session, "toolId": "c1", "decision": "reject", "fingerprint": seen},
            {"sessionId": session, "toolId": "c2", "decision": "reject"},
        ]))
        .await;
    assert_eq!(fresh["results"][0]["ok"], true, "{fresh}");
    hub.wait_status(&session, "idle").await;
    assert!(!folder.join("c1.txt").exists() && !folder.join("c2.txt").exists(), "rejected: neither ran");
}
