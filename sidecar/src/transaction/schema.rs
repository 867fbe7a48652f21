//! The documented shapes of the transaction endpoints.
//!
//! The handlers pass bodies and answers through as JSON (the extension reads
//! and writes them), so these types exist for the OpenAPI document; the
//! end-to-end tests check real answers against it, so it cannot drift.

use std::borrow::Cow;

use serde::Serialize;
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// How a SPEC field may be written: form A (a string) or form B (native).
#[derive(Clone, Copy)]
enum Form {
    /// A string in both forms.
    Text,
    /// Form A `"Yes"`/`"No"`, form B a boolean.
    Flag,
    /// Form A a string of digits, form B a number.
    Amount,
    /// A whole number, or a string of digits.
    Count,
}

/// The fields of SPEC's transaction that the engine reads.
const FIELDS: [(&str, Form, &str); 26] = [
    (
        "email",
        Form::Text,
        "form A: the registered e-mail address (also read from `Email`)",
    ),
    ("product", Form::Text, "a product or a service"),
    (
        "amount",
        Form::Amount,
        "0 to 1e12; form A a string of digits with at most one '.'",
    ),
    ("location", Form::Text, "a place name"),
    (
        "time",
        Form::Text,
        "form A `YYYY-MM-DD HH:MM:SS`, form B ISO 8601",
    ),
    (
        "customerProfile",
        Form::Text,
        "the customer type (also read from `Profile`)",
    ),
    ("onlinePurchase", Form::Flag, "true/false or \"Yes\"/\"No\""),
    ("paymentMethod", Form::Text, "payment method label"),
    ("shippingAddress", Form::Text, "shipping address"),
    ("billingAddress", Form::Text, "billing address"),
    ("customerEmail", Form::Text, "the customer's e-mail address"),
    (
        "customerName",
        Form::Text,
        "the customer's name (also read from `Name`)",
    ),
    (
        "isVPN",
        Form::Flag,
        "true/false or \"Yes\"/\"No\"; true never scores lower",
    ),
    ("clientBrowser", Form::Text, "browser"),
    ("deviceType", Form::Text, "device type"),
    ("ipAddress", Form::Text, "IPv4 or IPv6 address"),
    ("deviceFingerprint", Form::Text, "device identity"),
    (
        "transactionFrequency",
        Form::Count,
        "transactions as counted by the client",
    ),
    ("accountAge", Form::Count, "days"),
    (
        "emailDomain",
        Form::Text,
        "the domain the e-mail should be of",
    ),
    (
        "addressMismatch",
        Form::Flag,
        "true/false or \"Yes\"/\"No\"",
    ),
    ("twoFactorAuth", Form::Flag, "true/false or \"Yes\"/\"No\""),
    ("referralSource", Form::Text, "where the customer came from"),
    ("proxyOrVPN", Form::Flag, "true/false or \"Yes\"/\"No\""),
    ("orderQuantity", Form::Count, "items ordered"),
    (
        "strictness",
        Form::Count,
        "0 to 100, default 50; higher is stricter",
    ),
];

/// Longest string a text field may hold.
const MAX_TEXT_CHARS: usize = 1000;

/// The request of `POST /api/transaction`: SPEC's transaction, form A or B
/// field by field. No field is required; other fields are allowed and listed
/// in the answer's `ignoredFields`.
pub struct TransactionRequest;

impl PartialSchema for TransactionRequest {
    fn schema() -> RefOr<Schema> {
        let object = FIELDS.iter().fold(
            ObjectBuilder::new().schema_type(Type::Object),
            |object, (name, form, description)| {
                object.property(*name, property(*form).description(Some(*description)))
            },
        );
        object
            .description(Some(
                "SPEC's transaction in form A (strings) or form B (native types), field by \
                 field. Field names are also matched without regard to case where that is \
                 unambiguous; fields the engine does not read are listed in `ignoredFields`.",
            ))
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .into()
    }
}

impl ToSchema for TransactionRequest {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("TransactionRequest")
    }
}

fn property(form: Form) -> ObjectBuilder {
    let types = |t: &[Type]| SchemaType::Array(t.to_vec());
    match form {
        Form::Text => ObjectBuilder::new()
            .schema_type(Type::String)
            .max_length(Some(MAX_TEXT_CHARS)),
        Form::Flag => ObjectBuilder::new().schema_type(types(&[Type::Boolean, Type::String])),
        Form::Amount => ObjectBuilder::new()
            .schema_type(types(&[Type::Number, Type::String]))
            .minimum(Some(0.0)),
        Form::Count => ObjectBuilder::new()
            .schema_type(types(&[Type::Integer, Type::String]))
            .minimum(Some(0.0)),
    }
}

/// The answer of `POST /api/transaction` (`vigil.risk_score`).
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // documentation only: the extension's answer is passed through
pub struct Assessment {
    #[serde(rename = "transactionId")]
    #[schema(pattern = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
    transaction_id: String,
    /// 0 to 100, higher is riskier.
    #[serde(rename = "RiskScore")]
    #[schema(minimum = 0, maximum = 100)]
    risk_score: f64,
    /// SPEC's levels 0 to 7.
    #[serde(rename = "RiskLevel")]
    #[schema(minimum = 0, maximum = 7)]
    risk_level: u8,
    #[serde(rename = "RiskLevelLabel")]
    risk_level_label: String,
    #[serde(rename = "ConfidenceLevel")]
    confidence_level: Confidence,
    #[serde(rename = "Result")]
    result: Outcome,
    /// The signals that fired.
    reasons: Vec<Reason>,
    /// Body fields the engine does not read (present only when there are some).
    #[serde(rename = "ignoredFields", skip_serializing_if = "Option::is_none")]
    ignored_fields: Option<Vec<String>>,
}

#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Reason {
    /// A signal's code, such as `VPN_OR_PROXY` (README lists them).
    code: String,
    /// Points it added (negative for mitigations).
    points: f64,
    detail: String,
}

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

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum Label {
    Fraud,
    Legit,
    Chargeback,
}

/// The answer of the feedback endpoint (`vigil.transaction_feedback`).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)] // documentation only: the extension's answer is passed through
pub struct FeedbackResult {
    #[schema(pattern = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
    transaction_id: String,
    label: Label,
    /// The identity kinds (email, device, ip, card) now hard rules through this label.
    hard_rules: Vec<String>,
}
