/**
 * The state schema, as an ordered list of migrations. A migration is never edited
 * once released: its checksum is recorded when applied, and a database whose
 * recorded checksum differs refuses to boot. Change the schema by appending one.
 *
 * `sql(s)` receives the quoted schema name, so one database can hold several
 * independent stores (one per schema).
 *
 * Design notes:
 * - Opaque payloads (event data, tool input/output, continuations, ...) are `json`,
 *   not `jsonb`: `json` keeps the text as written and accepts `\u0000` in strings,
 *   which `jsonb` and every JSON operator reject. SQL never looks inside them.
 * - Timestamps the caller supplies inside a record (a tool call's `createdAt`, a
 *   file's `createdAt`, ...) are stored as text so they round-trip exactly;
 *   timestamps the store compares (leases, availability, due times) are
 *   `timestamptz`.
 * - `position` identity columns give a stable insertion order (listRuns pages,
 *   claims oldest first) that equal timestamps cannot.
 * - Tables updated in place (runs on every append, deliveries and schedules on
 *   every claim) keep free space per page (fillfactor), so updates that touch no
 *   indexed column stay HOT: no index writes, less WAL per commit.
 * - The hot paths (createRun, appendEvents, putSetting) are PL/pgSQL functions:
 *   one round trip each, and the server caches their plans per connection.
 * - Identifier and path columns are COLLATE "C": byte-wise comparisons whatever
 *   the database's default collation, and code-point order for sorted listings.
 * - Statuses are checked when rows are read, not by CHECK constraints, so a new
 *   status is a code change rather than a migration, and a bad row names itself.
 */
import { conversationAgentsMigration } from "./conversation-agents-migration.js";
import { scheduleAgentsMigration } from "./schedule-agents-migration.js";
import { pathCountsMigration } from "./path-counts-migration.js";
import { skillsMigration } from "./skills-migration.js";
import { runAgentsMigration } from "./run-agents-migration.js";
import { usageAgentsMigration } from "./usage-agents-migration.js";
import { unfinishedRunsMigration } from "./unfinished-runs-migration.js";

export interface Migration {
  version: number;
  name: string;
  sql: (s: string) => string;
}

const initialSchema = (s: string) => `
CREATE TABLE ${s}.runs (
  id text COLLATE "C" PRIMARY KEY,
  position bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  agent_id text COLLATE "C" NOT NULL,
  agent_revision text NOT NULL,
  conversation_id text COLLATE "C",
  status text NOT NULL,
  model_spec text NOT NULL,
  input json NOT NULL,
  output json,
  error json,
  last_seq integer NOT NULL DEFAULT 0,
  observed_seq integer NOT NULL DEFAULT 0,
  lease_owner text,
  lease_expires_at timestamptz,
  idempotency_key text COLLATE "C" UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 70);
CREATE INDEX runs_recoverable ON ${s}.runs (position) WHERE status IN ('queued', 'running');
CREATE INDEX runs_by_status ON ${s}.runs (status, position);
CREATE INDEX runs_by_agent ON ${s}.runs (agent_id, position);
CREATE INDEX runs_by_conversation ON ${s}.runs (conversation_id, position);

CREATE TABLE ${s}.run_events (
  run_id text COLLATE "C" NOT NULL REFERENCES ${s}.runs (id) ON DELETE CASCADE,
  seq integer NOT NULL,
  type text NOT NULL,
  data json NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (run_id, seq)
);

CREATE TABLE ${s}.tool_calls (
  run_id text COLLATE "C" NOT NULL REFERENCES ${s}.runs (id) ON DELETE CASCADE,
  call_id text COLLATE "C" NOT NULL,
  position bigint GENERATED ALWAYS AS IDENTITY,
  tool_name text NOT NULL,
  input json,
  input_digest text NOT NULL,
  status text NOT NULL,
  output json,
  model_output json,
  error text,
  approval_id text COLLATE "C",
  question json,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  PRIMARY KEY (run_id, call_id)
);

CREATE TABLE ${s}.steps (
  run_id text COLLATE "C" NOT NULL REFERENCES ${s}.runs (id) ON DELETE CASCADE,
  key text COLLATE "C" NOT NULL,
  result json,
  metadata json NOT NULL,
  created_at text NOT NULL,
  PRIMARY KEY (run_id, key)
);

CREATE TABLE ${s}.checkpoints (
  run_id text COLLATE "C" PRIMARY KEY REFERENCES ${s}.runs (id) ON DELETE CASCADE,
  continuation json,
  created_at text NOT NULL
);

CREATE TABLE ${s}.deliveries (
  id text COLLATE "C" PRIMARY KEY,
  position bigint GENERATED ALWAYS AS IDENTITY,
  run_id text COLLATE "C" NOT NULL REFERENCES ${s}.runs (id) ON DELETE CASCADE,
  channel text NOT NULL,
  conversation_id text COLLATE "C",
  payload json,
  status text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  available_at timestamptz NOT NULL,
  last_error text,
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
) WITH (fillfactor = 80);
CREATE INDEX deliveries_by_run ON ${s}.deliveries (run_id, position);
CREATE INDEX deliveries_pending ON ${s}.deliveries (available_at, position) WHERE status = 'pending';

CREATE TABLE ${s}.conversation_messages (
  position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  conversation_id text COLLATE "C" NOT NULL,
  role text NOT NULL,
  content text NOT NULL,
  run_id text COLLATE "C",
  created_at text NOT NULL
);
CREATE INDEX conversation_messages_by_conversation ON ${s}.conversation_messages (conversation_id, position);

CREATE TABLE ${s}.schedules (
  id text COLLATE "C" PRIMARY KEY,
  interval_ms bigint NOT NULL,
  next_run_at timestamptz NOT NULL,
  payload json,
  enabled boolean NOT NULL,
  lease_owner text,
  lease_expires_at timestamptz
) WITH (fillfactor = 80);
CREATE INDEX schedules_due ON ${s}.schedules (next_run_at) WHERE enabled;

CREATE TABLE ${s}.files (
  path text COLLATE "C" PRIMARY KEY,
  blob_key text NOT NULL,
  size bigint NOT NULL,
  content_type text NOT NULL,
  sha256 text NOT NULL,
  run_id text COLLATE "C",
  created_at text NOT NULL
);

CREATE TABLE ${s}.usage (
  position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text COLLATE "C" NOT NULL UNIQUE,
  run_id text COLLATE "C" NOT NULL,
  conversation_id text COLLATE "C",
  provider text NOT NULL,
  model text NOT NULL,
  input_tokens double precision NOT NULL,
  output_tokens double precision NOT NULL,
  cache_read_tokens double precision NOT NULL,
  cache_write_tokens double precision NOT NULL,
  cost_usd double precision NOT NULL,
  created_at text NOT NULL
);
CREATE INDEX usage_by_run ON ${s}.usage (run_id, position);
CREATE INDEX usage_by_conversation ON ${s}.usage (conversation_id, position);

CREATE TABLE ${s}.sandbox_sessions (
  key text COLLATE "C" PRIMARY KEY,
  adapter text NOT NULL,
  session_id text NOT NULL,
  data json,
  created_at text NOT NULL,
  updated_at text NOT NULL
);

CREATE TABLE ${s}.memory (
  path text COLLATE "C" PRIMARY KEY,
  content text NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE ${s}.settings (
  key text COLLATE "C" PRIMARY KEY,
  value json,
  updated_at timestamptz NOT NULL
);

CREATE TABLE ${s}.setting_audit (
  position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text COLLATE "C" NOT NULL UNIQUE,
  key text COLLATE "C" NOT NULL,
  value json,
  previous json,
  actor text NOT NULL,
  reason text,
  created_at timestamptz NOT NULL
);
CREATE INDEX setting_audit_by_key ON ${s}.setting_audit (key, position);

-- createRun in one round trip: the run at seq 1 with its run.created event, or the
-- run that already holds this id or idempotency key. After ON CONFLICT waited out
-- a concurrent create, the next statement's fresh snapshot sees the winner.
CREATE FUNCTION ${s}.create_run(
  p_id text,
  p_agent_id text,
  p_agent_revision text,
  p_conversation_id text,
  p_status text,
  p_model_spec text,
  p_input json,
  p_idempotency_key text,
  p_created_data json
) RETURNS TABLE (
  created boolean, id text, agent_id text, agent_revision text, conversation_id text, status text, model_spec text,
  input json, output json, error json, last_seq integer, observed_seq integer, lease_owner text,
  lease_expires_at timestamptz, created_at timestamptz, updated_at timestamptz
)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  v ${s}.runs%ROWTYPE;
BEGIN
  INSERT INTO ${s}.runs (id, agent_id, agent_revision, conversation_id, status, model_spec, input, last_seq, idempotency_key)
  VALUES (p_id, p_agent_id, p_agent_revision, p_conversation_id, p_status, p_model_spec, p_input, 1, p_idempotency_key)
  ON CONFLICT DO NOTHING
  RETURNING * INTO v;
  IF FOUND THEN
    INSERT INTO ${s}.run_events (run_id, seq, type, data, created_at) VALUES (p_id, 1, 'run.created', p_created_data, v.created_at);
    created := true;
  ELSE
    SELECT * INTO v FROM ${s}.runs r
    WHERE (p_idempotency_key IS NOT NULL AND r.idempotency_key = p_idempotency_key) OR r.id = p_id
    ORDER BY (r.idempotency_key IS NOT DISTINCT FROM p_idempotency_key) DESC
    LIMIT 1;
    created := false;
  END IF;
  id := v.id; agent_id := v.agent_id; agent_revision := v.agent_revision; conversation_id := v.conversation_id;
  status := v.status; model_spec := v.model_spec; input := v.input; output := v.output; error := v.error;
  last_seq := v.last_seq; observed_seq := v.observed_seq; lease_owner := v.lease_owner;
  lease_expires_at := v.lease_expires_at; created_at := v.created_at; updated_at := v.updated_at;
  RETURN NEXT;
END
$fn$;

-- appendEvents in one round trip. The run row lock serializes appenders of one
-- run, so seqs stay contiguous; the events, the state change and the new
-- last_seq commit together because a statement is its own transaction.
-- FOR NO KEY UPDATE (not FOR UPDATE): it excludes other appenders just the same,
-- but not the KEY SHARE locks that foreign-key checks of child rows take.
-- Payloads arrive as separate parameters and go into columns untouched (see the
-- note on json above), which is why the parameter list is long.
CREATE FUNCTION ${s}.append_events(
  p_run_id text,
  p_expected_last_seq integer,
  p_types text[],
  p_data json[],
  p_run_fields text[],
  p_status text,
  p_model_spec text,
  p_output json,
  p_error json,
  p_conversation_id text,
  p_tool_call_id text,
  p_tool_name text,
  p_tool_input json,
  p_tool_input_digest text,
  p_tool_status text,
  p_tool_output json,
  p_tool_model_output json,
  p_tool_error text,
  p_tool_approval_id text,
  p_tool_question json,
  p_tool_created_at text,
  p_tool_updated_at text,
  p_step_key text,
  p_step_result json,
  p_step_metadata json,
  p_step_created_at text,
  p_checkpoint_op text,
  p_checkpoint_continuation json,
  p_checkpoint_created_at text,
  p_delivery_id text,
  p_delivery_channel text,
  p_delivery_conversation_id text,
  p_delivery_payload json
) RETURNS TABLE (first_seq integer, recorded_at timestamptz)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_last integer;
  v_count integer;
  v_now timestamptz := now();
BEGIN
  SELECT r.last_seq INTO v_last FROM ${s}.runs r WHERE r.id = p_run_id FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'run % does not exist', p_run_id USING ERRCODE = 'ALNF1';
  END IF;
  IF p_expected_last_seq IS NOT NULL AND p_expected_last_seq <> v_last THEN
    RAISE EXCEPTION 'run % is at seq %', p_run_id, v_last USING ERRCODE = 'ALSEQ', DETAIL = v_last::text;
  END IF;

  INSERT INTO ${s}.run_events (run_id, seq, type, data, created_at)
  SELECT p_run_id, v_last + e.ord::integer, e.type, e.data, v_now
  FROM unnest(p_types, p_data) WITH ORDINALITY AS e(type, data, ord);
  GET DIAGNOSTICS v_count = ROW_COUNT;

  IF p_tool_call_id IS NOT NULL THEN
    INSERT INTO ${s}.tool_calls AS t (run_id, call_id, tool_name, input, input_digest, status, output,
      model_output, error, approval_id, question, created_at, updated_at)
    VALUES (p_run_id, p_tool_call_id, p_tool_name, p_tool_input, p_tool_input_digest, p_tool_status, p_tool_output,
      p_tool_model_output, p_tool_error, p_tool_approval_id, p_tool_question, p_tool_created_at, p_tool_updated_at)
    ON CONFLICT (run_id, call_id) DO UPDATE SET
      tool_name = EXCLUDED.tool_name, input = EXCLUDED.input, input_digest = EXCLUDED.input_digest,
      status = EXCLUDED.status, output = EXCLUDED.output, model_output = EXCLUDED.model_output,
      error = EXCLUDED.error, approval_id = EXCLUDED.approval_id, question = EXCLUDED.question,
      created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;
  END IF;

  IF p_step_key IS NOT NULL THEN
    INSERT INTO ${s}.steps (run_id, key, result, metadata, created_at)
    VALUES (p_run_id, p_step_key, p_step_result, p_step_metadata, p_step_created_at)
    ON CONFLICT (run_id, key) DO NOTHING;
  END IF;

  IF p_checkpoint_op = 'set' THEN
    INSERT INTO ${s}.checkpoints (run_id, continuation, created_at)
    VALUES (p_run_id, p_checkpoint_continuation, p_checkpoint_created_at)
    ON CONFLICT (run_id) DO UPDATE SET continuation = EXCLUDED.continuation, created_at = EXCLUDED.created_at;
  ELSIF p_checkpoint_op = 'clear' THEN
    DELETE FROM ${s}.checkpoints WHERE run_id = p_run_id;
  END IF;

  IF p_delivery_id IS NOT NULL THEN
    INSERT INTO ${s}.deliveries (id, run_id, channel, conversation_id, payload, status, attempts,
      available_at, created_at, updated_at)
    VALUES (p_delivery_id, p_run_id, p_delivery_channel, p_delivery_conversation_id, p_delivery_payload,
      'pending', 0, v_now, v_now, v_now)
    ON CONFLICT (id) DO NOTHING;
  END IF;

  UPDATE ${s}.runs SET
    last_seq = v_last + v_count,
    updated_at = v_now,
    status = CASE WHEN 'status' = ANY (p_run_fields) THEN p_status ELSE status END,
    model_spec = CASE WHEN 'modelSpec' = ANY (p_run_fields) THEN p_model_spec ELSE model_spec END,
    output = CASE WHEN 'output' = ANY (p_run_fields) THEN p_output ELSE output END,
    error = CASE WHEN 'error' = ANY (p_run_fields) THEN p_error ELSE error END,
    conversation_id = CASE WHEN 'conversationId' = ANY (p_run_fields) THEN p_conversation_id ELSE conversation_id END
  WHERE id = p_run_id;

  first_seq := v_last + 1;
  recorded_at := v_now;
  RETURN NEXT;
END
$fn$;

-- putSetting: the value and its audit event, with the previous value read under
-- the row lock so two concurrent writers each see the other's value.
CREATE FUNCTION ${s}.put_setting(p_key text, p_value json, p_audit_id text, p_actor text, p_reason text)
RETURNS TABLE (previous json, created_at timestamptz)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_previous json;
  v_now timestamptz := now();
BEGIN
  LOOP
    SELECT st.value INTO v_previous FROM ${s}.settings st WHERE st.key = p_key FOR UPDATE;
    IF FOUND THEN
      UPDATE ${s}.settings SET value = p_value, updated_at = v_now WHERE key = p_key;
      EXIT;
    END IF;
    INSERT INTO ${s}.settings (key, value, updated_at) VALUES (p_key, p_value, v_now) ON CONFLICT (key) DO NOTHING;
    IF FOUND THEN
      v_previous := NULL;
      EXIT;
    END IF;
    -- Another writer inserted the key first: loop to lock and read its value.
  END LOOP;
  INSERT INTO ${s}.setting_audit (id, key, value, previous, actor, reason, created_at)
  VALUES (p_audit_id, p_key, p_value, v_previous, p_actor, p_reason, v_now);
  previous := v_previous;
  created_at := v_now;
  RETURN NEXT;
END
$fn$;
`;

/**
 * Fencing tokens: every take of a run's lease bumps `lease_token` (a release keeps
 * it), and `append_events` refuses a write whose fence (owner, token) is not the
 * run's current lease, checked under the run row lock in the write's own statement.
 * `lease_session` is the advisory-lock key of the holder's liveness session: when
 * no session holds that key any more, the holder is gone and the run is taken at once.
 */
const fencingTokens = (s: string) => `
ALTER TABLE ${s}.runs ADD COLUMN lease_token bigint NOT NULL DEFAULT 0;
ALTER TABLE ${s}.runs ADD COLUMN lease_session bigint;
DROP FUNCTION ${s}.append_events(text, integer, text[], json[], text[], text, text, json, json, text, text, text, json, text, text, json, json, text, text, json, text, text, text, json, json, text, text, json, text, text, text, text, json);

CREATE FUNCTION ${s}.append_events(
  p_run_id text,
  p_expected_last_seq integer,
  p_types text[],
  p_data json[],
  p_run_fields text[],
  p_status text,
  p_model_spec text,
  p_output json,
  p_error json,
  p_conversation_id text,
  p_tool_call_id text,
  p_tool_name text,
  p_tool_input json,
  p_tool_input_digest text,
  p_tool_status text,
  p_tool_output json,
  p_tool_model_output json,
  p_tool_error text,
  p_tool_approval_id text,
  p_tool_question json,
  p_tool_created_at text,
  p_tool_updated_at text,
  p_step_key text,
  p_step_result json,
  p_step_metadata json,
  p_step_created_at text,
  p_checkpoint_op text,
  p_checkpoint_continuation json,
  p_checkpoint_created_at text,
  p_delivery_id text,
  p_delivery_channel text,
  p_delivery_conversation_id text,
  p_delivery_payload json,
  p_fence_owner text,
  p_fence_token bigint
) RETURNS TABLE (first_seq integer, recorded_at timestamptz)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_last integer;
  v_lease_owner text;
  v_lease_token bigint;
  v_count integer;
  v_now timestamptz := now();
BEGIN
  SELECT r.last_seq, r.lease_owner, r.lease_token INTO v_last, v_lease_owner, v_lease_token
  FROM ${s}.runs r WHERE r.id = p_run_id FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'run % does not exist', p_run_id USING ERRCODE = 'ALNF1';
  END IF;
  -- Under the row lock: no lease change can come between this check and the write.
  IF p_fence_owner IS NOT NULL AND (v_lease_owner IS DISTINCT FROM p_fence_owner OR v_lease_token <> p_fence_token) THEN
    RAISE EXCEPTION 'run % lease token is %', p_run_id, v_lease_token USING ERRCODE = 'ALFEN',
      DETAIL = CASE WHEN v_lease_owner IS NULL THEN '' ELSE v_lease_token::text END;
  END IF;
  IF p_expected_last_seq IS NOT NULL AND p_expected_last_seq <> v_last THEN
    RAISE EXCEPTION 'run % is at seq %', p_run_id, v_last USING ERRCODE = 'ALSEQ', DETAIL = v_last::text;
  END IF;

  INSERT INTO ${s}.run_events (run_id, seq, type, data, created_at)
  SELECT p_run_id, v_last + e.ord::integer, e.type, e.data, v_now
  FROM unnest(p_types, p_data) WITH ORDINALITY AS e(type, data, ord);
  GET DIAGNOSTICS v_count = ROW_COUNT;

  IF p_tool_call_id IS NOT NULL THEN
    INSERT INTO ${s}.tool_calls AS t (run_id, call_id, tool_name, input, input_digest, status, output,
      model_output, error, approval_id, question, created_at, updated_at)
    VALUES (p_run_id, p_tool_call_id, p_tool_name, p_tool_input, p_tool_input_digest, p_tool_status, p_tool_output,
      p_tool_model_output, p_tool_error, p_tool_approval_id, p_tool_question, p_tool_created_at, p_tool_updated_at)
    ON CONFLICT (run_id, call_id) DO UPDATE SET
      tool_name = EXCLUDED.tool_name, input = EXCLUDED.input, input_digest = EXCLUDED.input_digest,
      status = EXCLUDED.status, output = EXCLUDED.output, model_output = EXCLUDED.model_output,
      error = EXCLUDED.error, approval_id = EXCLUDED.approval_id, question = EXCLUDED.question,
      created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;
  END IF;

  IF p_step_key IS NOT NULL THEN
    INSERT INTO ${s}.steps (run_id, key, result, metadata, created_at)
    VALUES (p_run_id, p_step_key, p_step_result, p_step_metadata, p_step_created_at)
    ON CONFLICT (run_id, key) DO NOTHING;
  END IF;

  IF p_checkpoint_op = 'set' THEN
    INSERT INTO ${s}.checkpoints (run_id, continuation, created_at)
    VALUES (p_run_id, p_checkpoint_continuation, p_checkpoint_created_at)
    ON CONFLICT (run_id) DO UPDATE SET continuation = EXCLUDED.continuation, created_at = EXCLUDED.created_at;
  ELSIF p_checkpoint_op = 'clear' THEN
    DELETE FROM ${s}.checkpoints WHERE run_id = p_run_id;
  END IF;

  IF p_delivery_id IS NOT NULL THEN
    INSERT INTO ${s}.deliveries (id, run_id, channel, conversation_id, payload, status, attempts,
      available_at, created_at, updated_at)
    VALUES (p_delivery_id, p_run_id, p_delivery_channel, p_delivery_conversation_id, p_delivery_payload,
      'pending', 0, v_now, v_now, v_now)
    ON CONFLICT (id) DO NOTHING;
  END IF;

  UPDATE ${s}.runs SET
    last_seq = v_last + v_count,
    updated_at = v_now,
    status = CASE WHEN 'status' = ANY (p_run_fields) THEN p_status ELSE status END,
    model_spec = CASE WHEN 'modelSpec' = ANY (p_run_fields) THEN p_model_spec ELSE model_spec END,
    output = CASE WHEN 'output' = ANY (p_run_fields) THEN p_output ELSE output END,
    error = CASE WHEN 'error' = ANY (p_run_fields) THEN p_error ELSE error END,
    conversation_id = CASE WHEN 'conversationId' = ANY (p_run_fields) THEN p_conversation_id ELSE conversation_id END
  WHERE id = p_run_id;

  first_seq := v_last + 1;
  recorded_at := v_now;
  RETURN NEXT;
END
$fn$;
`;

/** Migration 3's append_events signature, which migration 4 replaces. */
const APPEND_EVENTS_V3_ARGS =
  "text, integer, text[], json[], text[], text, text, json, json, text, text, text, json, text, text, json, json, text, text, json, text, text, text, json, json, text, text, json, text, text, text, text, json, text, bigint";

/**
 * Where observers are, sent with the run's next write: `append_events` takes
 * `p_observed_seq` and moves `observed_seq` forward (never back) in the same
 * statement, so the runtime spends no commit of its own on `markObserved` per
 * append. The function is migration 3's with that parameter and that assignment
 * added; migration 3's text is checksummed, so it cannot drift under this one.
 */
const observedWithAppend = (s: string) => {
  const v3 = fencingTokens(s);
  const create = v3.slice(v3.indexOf(`CREATE FUNCTION ${s}.append_events(`));
  const withParameter = create.replace("  p_fence_token bigint\n)", "  p_fence_token bigint,\n  p_observed_seq integer\n)");
  const withAssignment = withParameter.replace(
    "    last_seq = v_last + v_count,\n",
    "    last_seq = v_last + v_count,\n    observed_seq = greatest(observed_seq, coalesce(p_observed_seq, observed_seq)),\n",
  );
  if (withParameter === create || withAssignment === withParameter) {
    throw new Error("migration 4 no longer finds migration 3's append_events; write its function out in full");
  }
  return `DROP FUNCTION ${s}.append_events(${APPEND_EVENTS_V3_ARGS});\n${withAssignment}`;
};

/**
 * createRun can lease the run to its creator in the same statement: `create_run`
 * takes the lease's owner, time to live and liveness session, and returns the
 * lease's fencing token (a run it created has token 1 when leased, else 0; the
 * statement that calls it cannot see the row it inserted).
 */
const createRunWithLease = (s: string) => `
DROP FUNCTION ${s}.create_run(text, text, text, text, text, text, json, text, json);
CREATE FUNCTION ${s}.create_run(
  p_id text,
  p_agent_id text,
  p_agent_revision text,
  p_conversation_id text,
  p_status text,
  p_model_spec text,
  p_input json,
  p_idempotency_key text,
  p_created_data json,
  p_lease_owner text,
  p_lease_ttl_ms double precision,
  p_lease_session bigint
) RETURNS TABLE (
  created boolean, id text, agent_id text, agent_revision text, conversation_id text, status text, model_spec text,
  input json, output json, error json, last_seq integer, observed_seq integer, lease_owner text,
  lease_expires_at timestamptz, created_at timestamptz, updated_at timestamptz, lease_token bigint
)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  v ${s}.runs%ROWTYPE;
BEGIN
  INSERT INTO ${s}.runs (id, agent_id, agent_revision, conversation_id, status, model_spec, input, last_seq, idempotency_key,
    lease_owner, lease_expires_at, lease_token, lease_session)
  VALUES (p_id, p_agent_id, p_agent_revision, p_conversation_id, p_status, p_model_spec, p_input, 1, p_idempotency_key,
    p_lease_owner,
    CASE WHEN p_lease_owner IS NULL THEN NULL ELSE now() + p_lease_ttl_ms * interval '1 millisecond' END,
    CASE WHEN p_lease_owner IS NULL THEN 0 ELSE 1 END,
    CASE WHEN p_lease_owner IS NULL THEN NULL ELSE p_lease_session END)
  ON CONFLICT DO NOTHING
  RETURNING * INTO v;
  IF FOUND THEN
    INSERT INTO ${s}.run_events (run_id, seq, type, data, created_at) VALUES (p_id, 1, 'run.created', p_created_data, v.created_at);
    created := true;
  ELSE
    SELECT * INTO v FROM ${s}.runs r
    WHERE (p_idempotency_key IS NOT NULL AND r.idempotency_key = p_idempotency_key) OR r.id = p_id
    ORDER BY (r.idempotency_key IS NOT DISTINCT FROM p_idempotency_key) DESC
    LIMIT 1;
    created := false;
  END IF;
  id := v.id; agent_id := v.agent_id; agent_revision := v.agent_revision; conversation_id := v.conversation_id;
  status := v.status; model_spec := v.model_spec; input := v.input; output := v.output; error := v.error;
  last_seq := v.last_seq; observed_seq := v.observed_seq; lease_owner := v.lease_owner;
  lease_expires_at := v.lease_expires_at; created_at := v.created_at; updated_at := v.updated_at; lease_token := v.lease_token;
  RETURN NEXT;
END
$fn$;
`;

/**
 * Whose reply each delivery is. Several agents may share one database: a claim with `agentId`
 * walks `deliveries_pending_by_agent` over that agent's pending rows only (its runs' and its
 * subagents', whose ids start with `<agent id>/`: keyed by the part before the first `/`, the
 * rows come in claim order for any plan), instead of every due row with its run looked up, so
 * another agent's backlog (a host gone, its replies due) costs it nothing. Pending rows take their
 * run's agent (only they are ever claimed: a delivered or failed row never is pending again, so a
 * long history of them is not rewritten); `append_events` (migration 4's, the same signature)
 * writes the run's agent with each delivery it enqueues, read from the run row it already locks.
 */
const deliveriesByAgent = (s: string) => {
  const v4 = observedWithAppend(s);
  const create = v4.slice(v4.indexOf(`CREATE FUNCTION ${s}.append_events(`));
  const replaced = [
    [`CREATE FUNCTION ${s}.append_events(`, `CREATE OR REPLACE FUNCTION ${s}.append_events(`],
    ["  v_lease_token bigint;\n", "  v_lease_token bigint;\n  v_agent_id text;\n"],
    [
      "SELECT r.last_seq, r.lease_owner, r.lease_token INTO v_last, v_lease_owner, v_lease_token\n",
      "SELECT r.last_seq, r.lease_owner, r.lease_token, r.agent_id INTO v_last, v_lease_owner, v_lease_token, v_agent_id\n",
    ],
    ["      available_at, created_at, updated_at)\n", "      available_at, created_at, updated_at, agent_id)\n"],
    ["      'pending', 0, v_now, v_now, v_now)\n", "      'pending', 0, v_now, v_now, v_now, v_agent_id)\n"],
  ].reduce((text, [from, to]) => {
    if (!text.includes(from!)) throw new Error(`migration 9 no longer finds ${JSON.stringify(from)} in migration 4's append_events; write its function out in full`);
    return text.replace(from!, to!);
  }, create);
  return `
ALTER TABLE ${s}.deliveries ADD COLUMN agent_id text COLLATE "C";

UPDATE ${s}.deliveries AS d SET agent_id = r.agent_id
FROM ${s}.runs AS r
WHERE r.id = d.run_id AND d.status = 'pending';

CREATE INDEX deliveries_pending_by_agent ON ${s}.deliveries (split_part(agent_id, '/', 1), available_at, position) WHERE status = 'pending';
${replaced}`;
};

/**
 * `append_events` refuses (SQLSTATE ALOBS, the log's new last seq as DETAIL) an observer position
 * past the run's log after the append: observers cannot have seen events it does not hold, and
 * `observed_seq` never moves back, so every event appended later would go unobserved. The function
 * is migration 9's (the same signature, replaced in place) with that check added under the row lock,
 * before anything is written.
 */
const observedWithinLog = (s: string) => {
  const v9 = deliveriesByAgent(s);
  const create = v9.slice(v9.indexOf(`CREATE OR REPLACE FUNCTION ${s}.append_events(`));
  const seqCheck = "    RAISE EXCEPTION 'run % is at seq %', p_run_id, v_last USING ERRCODE = 'ALSEQ', DETAIL = v_last::text;\n  END IF;\n";
  const observedCheck = `  IF p_observed_seq > v_last + coalesce(cardinality(p_types), 0) THEN
    RAISE EXCEPTION 'run % holds no event %', p_run_id, p_observed_seq USING ERRCODE = 'ALOBS',
      DETAIL = (v_last + coalesce(cardinality(p_types), 0))::text;
  END IF;
`;
  if (!create.startsWith("CREATE OR REPLACE FUNCTION") || !create.includes(seqCheck)) {
    throw new Error("migration 12 no longer finds migration 9's append_events; write its function out in full");
  }
  return create.replace(seqCheck, `${seqCheck}${observedCheck}`);
};

/**
 * `append_events` takes the append's `expectedLastSeq` and the observers' position as bigint: the
 * contract allows any whole number, and an integer parameter failed the call past 2^31 - 1 (a
 * failed query) where the answer is a seq mismatch, or a position past the run's log. Migration
 * 12's function (its text is checksummed) with those two parameters' types changed; the new
 * signature needs the old function dropped.
 */
const seqParametersAsBigint = (s: string) => {
  const v12 = observedWithinLog(s);
  const replaced = [
    ["  p_expected_last_seq integer,\n", "  p_expected_last_seq bigint,\n"],
    ["  p_observed_seq integer\n)", "  p_observed_seq bigint\n)"],
  ].reduce((text, [from, to]) => {
    if (!text.includes(from!)) throw new Error(`migration 13 no longer finds ${JSON.stringify(from)} in migration 12's append_events; write its function out in full`);
    return text.replace(from!, to!);
  }, v12);
  return `DROP FUNCTION ${s}.append_events(${APPEND_EVENTS_V3_ARGS}, integer);\n${replaced}`;
};

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "initial state schema", sql: initialSchema },
  skillsMigration,
  { version: 3, name: "run lease fencing tokens and liveness sessions", sql: fencingTokens },
  { version: 4, name: "observer position written with appended events", sql: observedWithAppend },
  { version: 5, name: "runs created with their creator's lease", sql: createRunWithLease },
  pathCountsMigration,
  conversationAgentsMigration,
  scheduleAgentsMigration,
  { version: 9, name: "deliveries by agent", sql: deliveriesByAgent },
  usageAgentsMigration,
  runAgentsMigration,
  { version: 12, name: "observer position within the log", sql: observedWithinLog },
  { version: 13, name: "seq positions as bigint parameters", sql: seqParametersAsBigint },
  unfinishedRunsMigration,
];

/** The schema version this code writes and expects. */
export const LATEST_SCHEMA_VERSION = MIGRATIONS.reduce((latest, migration) => Math.max(latest, migration.version), 0);
