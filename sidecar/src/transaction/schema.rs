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

use crate::outcome::{Confidence, Outcome};

/// How a SPEC field may be written: form A (a string) or form B (native).
/// The document states the formats the engine checks (`vigil_risk::input`);
/// where the engine accepts more (other spellings, surrounding spaces,
/// IPv6), the document promises the plain forms only.
#[derive(Clone, Copy)]
enum Form {
    /// A string in both forms.
    Text,
    /// An e-mail address (or empty).
    Email,
    /// An IPv4 address (or empty; the engine also takes IPv6).
    Ip,
    /// A date-time from 1970 (or empty).
    Time,
    /// Form A `"Yes"`/`"No"`, form B a boolean.
    Flag,
    /// Form A a string of digits, form B a number.
    Amount,
    /// A whole number up to the bound, or a string of its digits.
    Count(u32),
}

/// The fields of SPEC's transaction that the engine reads.
const FIELDS: [(&str, Form, &str); 26] = [
    (
        "email",
        Form::Email,
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
        Form::Time,
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
    (
        "customerEmail",
        Form::Email,
        "the customer's e-mail address",
    ),
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
    ("ipAddress", Form::Ip, "IPv4 or IPv6 address"),
    ("deviceFingerprint", Form::Text, "device identity"),
    (
        "transactionFrequency",
        Form::Count(1_000_000),
        "transactions as counted by the client",
    ),
    ("accountAge", Form::Count(36_525), "days"),
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
    ("orderQuantity", Form::Count(1_000_000), "items ordered"),
    (
        "strictness",
        Form::Count(100),
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
    let text = |pattern: &str| {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .max_length(Some(MAX_TEXT_CHARS))
            .pattern(Some(pattern))
    };
    // A string pattern applies to strings only, so a field of two types
    // keeps its number's range and its string's form apart.
    match form {
        Form::Text => text("^[^\\u0000]*$"),
        Form::Email => text("^([A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,200})?$"),
        Form::Ip => text(
            "^(((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))?$",
        ),
        Form::Time => text(
            "^((19[7-9][0-9]|20[0-9]{2})-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])[T ]\
             ([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?Z?)?$",
        ),
        Form::Flag => ObjectBuilder::new()
            .schema_type(types(&[Type::Boolean, Type::String]))
            .pattern(Some("^(Yes|No|yes|no|true|false)?$")),
        Form::Amount => ObjectBuilder::new()
            .schema_type(types(&[Type::Number, Type::String]))
            .minimum(Some(0.0))
            .maximum(Some(1e12))
            .pattern(Some("^([0-9]{1,12}(\\.[0-9]{0,6})?)?$")),
        Form::Count(most) => ObjectBuilder::new()
            .schema_type(types(&[Type::Integer, Type::String]))
            .minimum(Some(0.0))
            .maximum(Some(f64::from(most)))
            .pattern(Some(match most {
                100 => "^([0-9]{1,2}|100)?$",
                36_525 => "^[0-9]{0,4}$",
                _ => "^[0-9]{0,6}$",
            })),
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
    /// A signal's code, such as `VPN_OR_PROXY` (docs/reference/signals.md lists them).
    code: String,
    /// Points it added (negative for mitigations).
    points: f64,
    detail: String,
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
    /// The identity kinds of the transaction (email, card) now hard rules
    /// through this label: the same payer fails.
    hard_rules: Vec<String>,
    /// The identity kinds (device, ip) now linked to confirmed fraud: graded
    /// evidence for later transactions, fading with time and with sharing.
    linked: Vec<String>,
}
