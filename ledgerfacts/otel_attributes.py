"""The span attributes a ledger's rows travel under in OpenTelemetry, shared by the exporter
(otel/) and the OTLP importer (importers/otlp.py), so that a ledger exported and imported again
comes back the same.

The GenAI names are OpenTelemetry's semantic conventions (v1.41.0, the last release of the GenAI
conventions in the main repository, as the opentelemetry-semantic-conventions package names
them; docs/decisions.md, "OpenTelemetry out and in"). What those conventions have no name for (a
turn's parent, a session's label, the context of a turn's last call) is under `ledgerweb.`.
"""

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv._incubating.attributes import session_attributes

SEMCONV_VERSION = "1.41.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
SCOPE = "ledgerweb.otel"  # the instrumentation scope of every exported span

OPERATION = gen_ai.GEN_AI_OPERATION_NAME
INVOKE_AGENT = gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value
EXECUTE_TOOL = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
CHAT = gen_ai.GenAiOperationNameValues.CHAT.value
CONVERSATION_ID = gen_ai.GEN_AI_CONVERSATION_ID
SESSION_ID = session_attributes.SESSION_ID
AGENT_NAME = gen_ai.GEN_AI_AGENT_NAME
REQUEST_MODEL = gen_ai.GEN_AI_REQUEST_MODEL
RESPONSE_MODEL = gen_ai.GEN_AI_RESPONSE_MODEL
INPUT_TOKENS = gen_ai.GEN_AI_USAGE_INPUT_TOKENS
OUTPUT_TOKENS = gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
CACHE_READ_TOKENS = gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
CACHE_WRITE_TOKENS = gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
INPUT_MESSAGES = gen_ai.GEN_AI_INPUT_MESSAGES
OUTPUT_MESSAGES = gen_ai.GEN_AI_OUTPUT_MESSAGES
TOOL_NAME = gen_ai.GEN_AI_TOOL_NAME
TOOL_CALL_ID = gen_ai.GEN_AI_TOOL_CALL_ID
TOOL_ARGUMENTS = gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
TOOL_RESULT = gen_ai.GEN_AI_TOOL_CALL_RESULT
ERROR_TYPE = "error.type"

# The ledger's own facts, where the conventions have none.
SESSION_LABEL = "ledgerweb.session.label"
SESSION_ROUTING_KEY = "ledgerweb.session.routing_key"
SESSION_STATUS = "ledgerweb.session.status"
SESSION_CREATED_AT = "ledgerweb.session.created_at"  # Unix ms
SESSION_HEAD = "ledgerweb.session.head_turn_id"  # the head when the span was exported
SESSION_ROOT = "ledgerweb.session.root_turn_id"  # a fork's root is its origin's
TURN_ID = "ledgerweb.turn.id"
TURN_PARENT_ID = "ledgerweb.turn.parent_id"
TURN_STATUS = "ledgerweb.turn.status"
TURN_PROMPT_TOKENS = "ledgerweb.turn.prompt_tokens"  # the context of the turn's last call
TURN_COMPLETION_TOKENS = "ledgerweb.turn.completion_tokens"
TURN_TOTAL_TOKENS = "ledgerweb.turn.total_tokens"
TURN_MODEL_CALLS = "ledgerweb.turn.model_calls"
TURN_SOURCE_EVENT = "ledgerweb.turn.source_event_id"
TOOL_CALL_STATUS = "ledgerweb.tool_call.status"
TOOL_CALL_SEQUENCE = "ledgerweb.tool_call.sequence"
REQUEST_ID = "ledgerweb.request.id"
REQUEST_PREFIX = "ledgerweb.request."  # + a nexus_requests column
STAGE_NAME = "ledgerweb.stage"
LINK_KIND = "ledgerweb.link"  # on a span link: parent_turn, spawned_by, ran_turn
