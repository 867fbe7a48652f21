-- vigil 0.7.1 -> 0.7.2: the searches plan their statements once per connection.
--
-- vigil.query_embeddings, vigil.keyword_search and vigil.hybrid_search run with
-- plan_cache_mode = force_generic_plan (the functions they call inherit it):
-- with custom plans every call planned its statements again, a fifth of a
-- hybrid search's time in SQL. vigil._nearest keeps planning for its database
-- on every call (force_custom_plan): a generic plan cannot know the
-- database's share of the records, and chose to scan them all for a small
-- one. Same arguments, results and order (README, vector database figures).

ALTER FUNCTION vigil.query_embeddings(text, text, integer, real[]) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION vigil.keyword_search(text, integer, text) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION vigil.hybrid_search(text, integer, text, text, real, real, real[]) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION vigil._nearest(bigint, real[], integer) SET plan_cache_mode = force_custom_plan;
