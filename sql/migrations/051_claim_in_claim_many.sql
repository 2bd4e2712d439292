-- ==== A claim's requests are claimed in tasks.claim_many itself (issue 35) ====
--
-- tasks.claim_many updates each request's rows and returns them as its
-- reply's, where it called tasks.claim once per request, which returned
-- whole task rows through a result set of its own.
DROP FUNCTION IF EXISTS tasks.claim(text, text[], integer[], integer, boolean, integer[]);
