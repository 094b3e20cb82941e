//! Read.

use super::*;

#[tokio::test]
async fn read_pages_cuts_and_notes() -> TestResult {
    let b = bench(PermissionMode::Default, &[]).await?;
    let lines: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(b.ws.join("long.txt"), &lines)?;
    std::fs::write(
        b.ws.join("wide.txt"),
        format!("{}\nshort", "x".repeat(5000)),
    )?;
    std::fs::write(b.ws.join("empty.txt"), "")?;
    std::fs::write(b.ws.join("bin.dat"), [0u8, 1, 2, 3, 0, 9])?;
    std::fs::create_dir(b.ws.join("dir"))?;

    let first = ok_text(&b.call("Read", json!({"file_path": b.p("long.txt")})).await);
    assert!(first.starts_with("1\tline 1\n2\tline 2\n"));
    assert!(first.contains("2000\tline 2000"));
    assert!(!first.contains("2001\tline 2001"));
    assert!(
        first.contains("Call Read again with offset 2001"),
        "a note says where to continue"
    );
    let page = ok_text(
        &b.call(
            "Read",
            json!({"file_path": b.p("long.txt"), "offset": 2999, "limit": 5}),
        )
        .await,
    );
    assert_eq!(page, "2999\tline 2999\n3000\tline 3000\n3001\t");
    let wide = ok_text(&b.call("Read", json!({"file_path": b.p("wide.txt")})).await);
    assert!(wide.contains("[line truncated]") && wide.contains("2\tshort") && wide.len() < 2200);
    assert!(
        ok_text(&b.call("Read", json!({"file_path": b.p("empty.txt")})).await).contains("is empty")
    );
    let past = ok_text(
        &b.call("Read", json!({"file_path": b.p("wide.txt"), "offset": 50}))
            .await,
    );
    assert!(past.contains("fewer than the requested offset"));

    for (file, expected) in [
        ("bin.dat", "binary"),
        ("dir", "directory"),
        ("missing.txt", "does not exist"),
    ] {
        let result = b.call("Read", json!({"file_path": b.p(file)})).await;
        assert!(
            result.is_error && text(&result).contains(expected),
            "{file}: {}",
            text(&result)
        );
    }
    for bad in [
        json!({}),
        json!({"file_path": "relative.txt"}),
        json!({"file_path": b.p("long.txt"), "extra": 1}),
        json!({"file_path": b.p("long.txt"), "limit": 0}),
    ] {
        let result = b.call("Read", bad.clone()).await;
        assert!(
            result.is_error && text(&result).contains("InputValidationError")
                || text(&result).contains("absolute"),
            "{bad}: {}",
            text(&result)
        );
    }
    Ok(())
}

#[tokio::test]
async fn read_returns_images_as_image_blocks() -> TestResult {
    let b = bench(PermissionMode::Default, &[]).await?;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    std::fs::write(b.ws.join("pixel.png"), png)?;
    let result = b.call("Read", json!({"file_path": b.p("pixel.png")})).await;
    assert!(!result.is_error);
    match &result.content {
        ToolResultContent::Blocks(blocks) => match &blocks[0] {
            ToolResultBlock::Image { source } => {
                assert_eq!(source.media_type, "image/png");
                assert_eq!(source.kind, "base64");
                assert!(!source.data.is_empty());
            }
            other => panic!("not an image: {other:?}"),
        },
        other => panic!("not blocks: {other:?}"),
    }
    Ok(())
}
