//! The verdict both assessments answer with, for the OpenAPI document: a
//! transaction's `Result` and `ConfidenceLevel` and an identity document's
//! take the same words.

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub enum Confidence {
    Low,
    Medium,
    High,
}

#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub enum Outcome {
    Passed,
    Review,
    Failed,
}
