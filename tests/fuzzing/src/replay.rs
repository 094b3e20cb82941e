//! The replay format (`--model replay:FILE`, the demo): any text is a
//! recording or a clear error.

use carapace::model::ReplayModel;

pub fn run(data: &[u8]) {
    if let Some(text) = crate::text(data) {
        let _ = ReplayModel::from_json(text);
    }
}
