//! What can go wrong turning a run into bytes.

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot render chart {id}: {message}")]
    Png { id: String, message: String },
    #[error("{0}")]
    Input(String),
}

pub type Result<T> = std::result::Result<T, ReportError>;
