-- Ready queries for fraud analysis in psql, over what vigil.risk_score recorded
-- (vigil.transactions) and the labels given since (vigil.transaction_labels).
--
--   scripts/pg-cluster.sh psql .vigil/pg -f sql/analysis.sql        (all of them)
--   \i sql/analysis.sql                                              (inside psql)
--
-- Each query stands alone: copy one and change its window or cut-offs. A
-- transaction counts as fraud when its latest label is `fraud` or `chargeback`.
-- Days are event time (occurred_at: the purchase's `time`), so a replayed or
-- backfilled history falls on the days it happened.

\echo '== volume, risk and fraud rate per day (last 30 days)'
SELECT date_trunc('day', t.occurred_at)::date AS day,
       count(*) AS transactions,
       round(avg(t.score)::numeric, 1) AS avg_score,
       count(*) FILTER (WHERE t.result = 'Failed') AS failed,
       count(*) FILTER (WHERE t.result = 'Review') AS review,
       count(l.label) AS labelled,
       count(*) FILTER (WHERE l.label IN ('fraud', 'chargeback')) AS fraud,
       round(100.0 * count(*) FILTER (WHERE l.label IN ('fraud', 'chargeback'))
             / nullif(count(l.label), 0), 1) AS fraud_pct_of_labelled
FROM vigil.transactions t
LEFT JOIN vigil.transaction_labels l ON l.transaction_id = t.id
WHERE t.occurred_at > now() - interval '30 days'
GROUP BY 1
ORDER BY 1;

\echo '== top reasons (last 30 days): how often each fired and its average points'
SELECT r->>'code' AS reason,
       count(*) AS fired,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct_of_reasons,
       round(avg((r->>'points')::numeric), 1) AS avg_points,
       count(*) FILTER (WHERE l.label IN ('fraud', 'chargeback')) AS on_fraud
FROM vigil.transactions t
CROSS JOIN LATERAL jsonb_array_elements(t.reasons) AS r
LEFT JOIN vigil.transaction_labels l ON l.transaction_id = t.id
WHERE t.occurred_at > now() - interval '30 days'
GROUP BY 1
ORDER BY fired DESC;

\echo '== riskiest devices, IPs and e-mails (last 30 days, at least 3 transactions)'
SELECT kind, identity, transactions, distinct_emails, avg_score, max_score, fraud
FROM (
    SELECT i.kind, i.identity,
           count(*) AS transactions,
           count(DISTINCT t.email) AS distinct_emails,
           round(avg(t.score)::numeric, 1) AS avg_score,
           max(t.score) AS max_score,
           count(*) FILTER (WHERE l.label IN ('fraud', 'chargeback')) AS fraud,
           row_number() OVER (PARTITION BY i.kind ORDER BY avg(t.score) DESC, count(*) DESC) AS rank
    FROM vigil.transactions t
    CROSS JOIN LATERAL (VALUES ('device', t.device), ('ip', t.ip), ('email', t.email)) AS i (kind, identity)
    LEFT JOIN vigil.transaction_labels l ON l.transaction_id = t.id
    WHERE t.occurred_at > now() - interval '30 days' AND i.identity IS NOT NULL
    GROUP BY i.kind, i.identity
    HAVING count(*) >= 3
) ranked
WHERE rank <= 10
ORDER BY kind, rank;

\echo '== score distribution (last 30 days), in bands of 10'
SELECT least(floor(t.score / 10) * 10, 90)::int AS from_score,
       least(floor(t.score / 10) * 10, 90)::int + 10 AS to_score,
       count(*) AS transactions,
       repeat('#', (50 * count(*) / max(count(*)) OVER ())::int) AS histogram
FROM vigil.transactions t
WHERE t.occurred_at > now() - interval '30 days'
GROUP BY 1
ORDER BY 1;

\echo '== precision and recall at each score cut-off, over labelled transactions'
-- Predicted fraud: score at or above the cut-off. Actual: labelled fraud or chargeback.
SELECT cutoff,
       tp, fp, fn,
       round(tp::numeric / nullif(tp + fp, 0), 3) AS precision,
       round(tp::numeric / nullif(tp + fn, 0), 3) AS recall
FROM (
    SELECT c.cutoff,
           count(*) FILTER (WHERE t.score >= c.cutoff AND l.label IN ('fraud', 'chargeback')) AS tp,
           count(*) FILTER (WHERE t.score >= c.cutoff AND l.label = 'legit') AS fp,
           count(*) FILTER (WHERE t.score < c.cutoff AND l.label IN ('fraud', 'chargeback')) AS fn
    FROM generate_series(10, 95, 5) AS c (cutoff)
    CROSS JOIN vigil.transactions t
    JOIN vigil.transaction_labels l ON l.transaction_id = t.id
    GROUP BY c.cutoff
) counts
ORDER BY cutoff;

-- Identity checks (vigil.assess_id records every assessment in
-- vigil.identity_assessments; `reasons` holds the codes).

\echo '== identity checks per day (last 30 days): results, retakes, duplicates'
SELECT date_trunc('day', a.assessed_at)::date AS day,
       count(*) AS assessed,
       count(*) FILTER (WHERE a.result = 'Passed') AS passed,
       count(*) FILTER (WHERE a.decision = 'resubmit') AS retake,
       count(*) FILTER (WHERE a.decision = 'review') AS review,
       count(*) FILTER (WHERE a.result = 'Failed') AS failed,
       count(*) FILTER (WHERE 'DUPLICATE_IMAGE' = ANY (a.reasons)) AS duplicates,
       round(100.0 * count(*) FILTER (WHERE a.decision = 'resubmit') / count(*), 1) AS retake_pct
FROM vigil.identity_assessments a
WHERE a.assessed_at > now() - interval '30 days'
GROUP BY 1
ORDER BY 1;

\echo '== identity reasons (last 30 days): how often each fired, and the share of assessments'
SELECT code,
       count(*) AS fired,
       round(100.0 * count(*) / (SELECT count(*) FROM vigil.identity_assessments
                                 WHERE assessed_at > now() - interval '30 days'), 1) AS pct_of_assessments
FROM vigil.identity_assessments a, unnest(a.reasons) AS code
WHERE a.assessed_at > now() - interval '30 days'
GROUP BY code
ORDER BY fired DESC;

\echo '== the same picture submitted again: each duplicate with the assessment it repeats and the keys'
SELECT a.assessed_at,
       a.id AS assessment,
       (a.response -> 'checks' -> 'duplicates' -> 'metrics' ->> 'duplicateOf')::uuid AS repeats,
       (a.response -> 'checks' -> 'duplicates' -> 'metrics' ->> 'distance')::int AS bits_apart,
       a.api_key_id,
       first.api_key_id AS first_api_key_id,
       a.assessed_at - first.assessed_at AS after
FROM vigil.identity_assessments a
JOIN vigil.identity_assessments first
  ON first.id = (a.response -> 'checks' -> 'duplicates' -> 'metrics' ->> 'duplicateOf')::uuid
WHERE 'DUPLICATE_IMAGE' = ANY (a.reasons)
ORDER BY a.assessed_at DESC
LIMIT 50;

\echo '== identity retakes by API key (last 7 days): integrations whose users struggle to take a usable photo'
SELECT a.api_key_id,
       count(*) AS assessed,
       round(100.0 * count(*) FILTER (WHERE a.decision = 'resubmit') / count(*), 1) AS retake_pct,
       mode() WITHIN GROUP (ORDER BY a.reasons[1]) AS commonest_first_reason
FROM vigil.identity_assessments a
WHERE a.assessed_at > now() - interval '7 days'
GROUP BY a.api_key_id
ORDER BY retake_pct DESC;

\echo '== the model learned from labels (vigil.risk_refit): its weights, strongest first'
SELECT f.feature, round(f.weight::numeric, 3) AS weight, m.id AS model, m.fitted_at, m.frauds, m.legit,
       round(m.intercept::numeric, 3) AS intercept
FROM (SELECT * FROM vigil.risk_models ORDER BY id DESC LIMIT 1) m
CROSS JOIN LATERAL unnest(m.features, m.weights) AS f (feature, weight)
ORDER BY abs(f.weight) DESC;
