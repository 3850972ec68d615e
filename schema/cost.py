"""What a request may cost, estimated before it runs, GitHub-style; refused over budget.

Two budgets. A *point* is one storage call the request could make; a *node* is one object
its response could hold. Each field that reads storage costs its calls times the number of
times it can run, which is the product of the page sizes and list lengths above it:

    Query.node, Query.comment            1
    Query.nodes(ids)                     len(ids); fields below run len(ids) times
    Query.topProducts(first)             LEADERBOARD_CALLS (every shard, the layout: a
                                         bound); fields below run `first` times
    Product.stats, .lastCommentedAt      1
    Product.structuredData(reviews)      as Product.comments(first: reviews), its listing
                                         without filters (ProductGroup's: as its comments)
    Product.comments(ratings, first)     1 (the counters) + the page's queries: one partition
                                         (no filter, one rating) is read in one round, a
                                         fan-out or filtered read in two (the top-ups), one
                                         query per rating each (a rating order reads each
                                         rating's partition in turn: the same bound); each
                                         query takes one call
                                         per ITEMS_PER_RESPONSE items of the page, as
                                         DynamoDB ends a response at 1 MB. Fields below run
                                         page-size times.
    Query.moderationQueue, Viewer.comments  1 (the count) + one partition's page
    Comment.viewerVote                   1 (batched per request: an upper bound)
    Subscription.commentEvents           per event: 1 with facets (their counters), 1 more
                                         for a group narrowed to a product
    Mutation.*                           MUTATION_STORAGE_CALLS (a report: one more)

Nodes count every object of the response (a connection, each edge, each comment...), with
list fields at their longest, and the objects a review markup string holds (its product
and each review); an object that selects one field under several aliases counts
once per copy. A response is therefore at most nodes x the largest object (a comment).

The estimate is total: every document that reaches execution gets a number. A field whose
arguments cannot be read (execution will fail it) is priced at its worst case; invalid page
arguments at PAGE_SIZE_MAX, with the page size read through storage's own function. When
the operation cannot be determined (several without an operationName) or the variables do
not coerce, the request is refused before execution. The figure is an upper bound: the
planner skips empty ratings and the loaders batch keys, so requests usually cost less. It
is also enforced: an accepted request carries its estimate as a budget of storage calls
(see storage.engine.metering), and a call beyond it fails its field with QUERY_TOO_COMPLEX.
Fragments count for every type they could apply to (the largest when a field's type is
abstract); @skip and @include are ignored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator, Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
)
from graphql.execution.values import VariableValues, get_argument_values, get_variable_values
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext

from resolvers.context import Context
from resolvers.errors import BadUserInput
from resolvers.pages import page_size
from resolvers.products.snippets import REVIEWS_DEFAULT, REVIEWS_MAX
from schema.limits import LIST_CAPS, check_variable_sizes, list_cap, list_too_long
from schema.viewer import KNOWN_ROLES
from storage.base.errors import InvalidInput
from storage.model import rules
from storage.model.attributes import ATTRIBUTES_MAX, VALUES_MAX
from storage.model.comments import PAGE_SIZE_MAX, REPORT_REASONS
from storage.model.facets import MAX_ATTRIBUTE_ANSWERS, MAX_TOPICS

# DynamoDB ends a Query response at 1 MB of items, so a page of large comments takes
# several calls (storage.model.items says how many a call holds at most).
from storage.model.items import ITEMS_PER_RESPONSE
from storage.model.problems import PROBLEMS_MAX
from storage.model.tagging import MATCHES_PER_TOPIC
from storage.model.topics import TOPICS_MAX
from storage.model.webhooks import ENDPOINTS_MAX, FILTER_MAX, EventType
from storage.reads.facet_summaries import SUMMARY_VALUES_MAX
from storage.reads.leaders import LEADERBOARD_CALLS, LEADERBOARD_MAX
from storage.writes import MAX_WRITE_CALLS
from storage.writes.rates import CHECK_CALLS
from storage.writes.webhook_endpoints import ATTEMPTS as ENDPOINT_ATTEMPTS

# The write path makes at most this many storage calls for one write, retries included (a
# guarantee of storage.writes), after the author's rate took its call (storage.writes.rates:
# a refused write makes one more and no write).
MUTATION_STORAGE_CALLS = MAX_WRITE_CALLS + CHECK_CALLS
# A webhook endpoint's change: the rate's calls, then at most ATTEMPTS rounds of two reads
# and a write (storage.writes.webhook_endpoints).
WEBHOOK_MUTATION_CALLS = CHECK_CALLS + 3 * ENDPOINT_ATTEMPTS
# A fan-out or filtered read: the first round, then the top-ups of storage.reads.executor.
ROUNDS = 2
# A facet listing filtered on what its partitions cannot tell apart: its first round is
# sized by the filters' share, and top-ups read on from there; a page that needs more
# rounds than this fails with QUERY_TOO_COMPLEX (the request's budget is spent).
FACET_ROUNDS = 4
# A summary of topics: its counter items (a Query, more pages past 1 MB: at most this
# many for every topic the taxonomy allows), and for labels the process's copy of the
# taxonomy: its head checked, and the taxonomy read when it changed.
TOPIC_CALLS = 4 + 2
# Naming all five ratings is no filter, so a fan-out reads at most four partitions; a
# verified-only read fans out over all five (the verified indexes are per rating).
FAN_OUT_MAX = len(rules.RATINGS)
# The longest leaderboard storage.reads.leaders.leaderboard returns.
TOP_MAX = LEADERBOARD_MAX
# Objects a response may hold by default (docs/cost-limits.md: a page of 100 comments with
# edges, nodes and each comment's product is about 400).
MAX_NODES = 1000

Args = Mapping[str, Any] | None  # None: the arguments could not be read


@dataclass(frozen=True, slots=True)
class Lengths:
    """List lengths below a comments field: its page and the queries its plan lists."""

    page: int
    queries: int


def _page_calls(size: int) -> int:
    """Calls to read a page of ``size`` (and one more item) from one partition."""
    return -(-(size + 1) // ITEMS_PER_RESPONSE)


# Outside any comments field; a connection can only be reached through one.
WORST = Lengths(PAGE_SIZE_MAX, ROUNDS * FAN_OUT_MAX * _page_calls(PAGE_SIZE_MAX))


@dataclass(frozen=True, slots=True)
class FieldCost:
    points: int = 0  # storage calls of one execution of the field
    items: int = 1  # values one execution returns (a list's length)
    lengths: Lengths | None = None  # list lengths below it, when it sets new ones
    # Objects a scalar value holds, counted as nodes: a markup string's reviews.
    held: int = 0


@dataclass(frozen=True, slots=True)
class Estimate:
    points: int  # storage calls the request may make
    nodes: int  # objects its response may hold
    # The listing fields the operation selects ("Product.comments"...): fields that read
    # a page, whose cost grows with its size.
    listings: frozenset[str] = frozenset()


class Refusal(Exception):
    """The request must not run; the errors say why."""

    def __init__(self, *errors: GraphQLError) -> None:
        super().__init__(errors[0].message)
        self.errors = list(errors)


def _comments(args: Args, _: Lengths) -> FieldCost:
    # Arguments execution will refuse (or could not read) are priced at their worst case.
    size, width = PAGE_SIZE_MAX, FAN_OUT_MAX
    if args is not None:
        with suppress(BadUserInput):
            size = page_size(
                args.get("first"), args.get("after"), args.get("last"), args.get("before")
            )
        with suppress(InvalidInput):
            ratings = rules.validate_ratings(args.get("ratings"))
            if ratings is not None:
                width = len(ratings)
            elif args.get("verifiedOnly") is False and not _by_rating(args.get("orderBy")):
                width = 0  # one partition
            # else: verified only, a rating order (its partitions in turn) or unknown:
            # every rating's partition
    # An empty page still reads each partition's lookahead item (for hasNextPage). A
    # single partition is one read, except in a rating order: there it is read to its
    # count, and a comment written since the counters were read takes one read more.
    single = width <= 1 and not (args is not None and _by_rating(args.get("orderBy")))
    rounds = ROUNDS
    facets = None if args is None else args.get("facets")
    if args is None or facets:
        # A facet listing reads one value's partitions, one per rating; filtered on what
        # they cannot tell apart, its top-ups may take more rounds (FACET_ROUNDS).
        single, width = False, FAN_OUT_MAX
        rounds = FACET_ROUNDS if args is None or _filtered(args, facets) else ROUNDS
    queries = _page_calls(size) * (1 if single else rounds * max(width, 1))
    return FieldCost(1 + queries, 1, Lengths(size, queries))


def _structured_data(
    listing: Callable[[Args, Lengths], FieldCost],
) -> Callable[[Args, Lengths], FieldCost]:
    """Review markup: the counters and the first ``reviews`` of the newest-first listing
    without filters, priced as that listing (``reviews`` out of range: its maximum)."""

    def cost(args: Args, lengths: Lengths) -> FieldCost:
        reviews = REVIEWS_MAX if args is None else args.get("reviews")
        if reviews is None:
            reviews = REVIEWS_DEFAULT
        if isinstance(reviews, bool) or not isinstance(reviews, int):
            reviews = REVIEWS_MAX
        elif not 0 <= reviews <= REVIEWS_MAX:
            reviews = REVIEWS_MAX  # refused when it runs; priced at the worst case
        found = listing({"first": reviews, "verifiedOnly": False, "orderBy": "NEWEST"}, lengths)
        # The string holds the product and its reviews, each about a comment's size.
        return replace(found, held=1 + reviews)

    return cost


def _filtered(args: Mapping[str, Any], facets: object) -> bool:
    """Whether a facet listing's queries filter (several values, verified purchases only,
    incentivized reviews left out), or may: unreadable facets are priced as if."""
    if not isinstance(facets, Mapping):
        return True
    values = len(facets.get("attributes") or ()) + (facets.get("topic") is not None)
    values += bool(facets.get("withPhotos"))
    return values > 1 or bool(facets.get("excludeIncentivized")) or bool(args.get("verifiedOnly"))


def _group_comments(args: Args, lengths: Lengths) -> FieldCost:
    """A group's listing: its entries, always (a facet listing over its ``*`` value), and
    the narrowed product's group read when ``facets.productId`` is given."""
    facets = None if args is None else args.get("facets")
    as_facets = {**(args or {}), "facets": facets or {"group": True}}
    cost = _comments(None if args is None else as_facets, lengths)
    narrowed = args is None or (isinstance(facets, Mapping) and facets.get("productId"))
    return FieldCost(cost.points + bool(narrowed), cost.items, cost.lengths)


def _comment_events(args: Args, _: Lengths) -> FieldCost:
    """What one event of a subscription reads beyond the counters every event carries: a
    facet listing's counter items (one TransactGetItems, for its totalCount), and a group
    narrowed to a product reads that product's group (once, when it subscribes: priced as
    if every event did, an upper bound)."""
    if args is None:
        return FieldCost(2)
    facets = args.get("facets")
    if facets is None:
        return FieldCost(0)
    narrowed = not isinstance(facets, Mapping) or (
        facets.get("productId") is not None and args.get("groupId") is not None
    )
    return FieldCost(1 + narrowed)


def _members(args: Args, _: Lengths) -> FieldCost:
    size = PAGE_SIZE_MAX
    if args is not None:
        with suppress(BadUserInput):
            size = page_size(args.get("first"), args.get("after"))
    return FieldCost(2, 1, Lengths(size, 0))


def _topics(args: Args, _: Lengths) -> FieldCost:
    first = None if args is None else args.get("first")
    shown = TOPICS_MAX if not isinstance(first, int) else max(0, min(first, TOPICS_MAX))
    return FieldCost(TOPIC_CALLS, shown)


def _by_rating(order: object) -> bool:
    """Whether the order reads the rating partitions in turn; an unreadable one is priced
    as if it did (the worst case)."""
    name = getattr(order, "name", order)
    return name not in ("NEWEST", "OLDEST", "MOST_HELPFUL")


def _partition(args: Args, _: Lengths) -> FieldCost:
    """One partition's page (an author's comments, the queue) and its count's read."""
    size = PAGE_SIZE_MAX
    if args is not None:
        with suppress(BadUserInput):
            size = page_size(
                args.get("first"), args.get("after"), args.get("last"), args.get("before")
            )
    queries = _page_calls(size)  # at size 0 too: the lookahead item is read
    return FieldCost(1 + queries, 1, Lengths(size, queries))


def _nodes(args: Args, _: Lengths) -> FieldCost:
    ids = None if args is None else args.get("ids")
    count = len(ids) if isinstance(ids, list) else LIST_CAPS[("Query", "nodes", "ids")]
    return FieldCost(count, count)


def _top(args: Args, _: Lengths) -> FieldCost:
    first = None if args is None else args.get("first")
    if isinstance(first, int) and 1 <= first <= TOP_MAX:
        return FieldCost(LEADERBOARD_CALLS, first)
    return FieldCost(LEADERBOARD_CALLS, TOP_MAX)  # storage refuses it; the worst case stands


def _calls(points: int) -> Callable[[Args, Lengths], FieldCost]:
    return lambda _args, _lengths: FieldCost(points)


def _length(measure: Callable[[Lengths], int]) -> Callable[[Args, Lengths], FieldCost]:
    return lambda _args, lengths: FieldCost(0, measure(lengths))


# Every field that reads storage, and every list field (a test checks the schema has no
# other): the rest cost nothing and return one value.
RULES: dict[tuple[str, str], Callable[[Args, Lengths], FieldCost]] = {
    ("Query", "node"): _calls(1),
    ("Query", "comment"): _calls(1),
    ("Query", "nodes"): _nodes,
    ("Query", "topProducts"): _top,
    ("Product", "stats"): _calls(1),
    ("Product", "lastCommentedAt"): _calls(1),
    ("Product", "comments"): _comments,
    ("Product", "structuredData"): _structured_data(_comments),
    # The product's group (whose definitions a grouped product's are), then them.
    ("Product", "attributeDefinitions"): lambda _a, _l: FieldCost(2, ATTRIBUTES_MAX),
    # The scope's answer counters (one Query), the product's group and the definitions
    # for the display order.
    ("Product", "attributeSummary"): lambda _a, _l: FieldCost(3, ATTRIBUTES_MAX),
    ("Product", "group"): _calls(1),
    # The product's group, then its definitions' item.
    ("Product", "attributeDefinitionsRevision"): _calls(2),
    ("ProductGroup", "attributeDefinitionsRevision"): _calls(1),
    ("Query", "topicTaxonomy"): _calls(1),
    ("TopicTaxonomy", "topics"): _length(lambda _: TOPICS_MAX),
    # The group's membership (a product), the definitions read and written, the rate.
    ("Mutation", "setAttributeDefinitions"): _calls(MUTATION_STORAGE_CALLS),
    ("Mutation", "setTopicTaxonomy"): _calls(MUTATION_STORAGE_CALLS),
    # The move's own calls go to the application's table, bounded by time (MOVE_SECONDS).
    ("Mutation", "setProductGroup"): _calls(MUTATION_STORAGE_CALLS),
    # Privacy requests: their scans go to the application's table, bounded by time
    # (resolvers.privacy); the request itself reads the job and spends a moderator's turn.
    ("Query", "exportAuthor"): _calls(1),
    ("Query", "authorErasure"): _calls(1),
    ("Mutation", "eraseAuthor"): _calls(MUTATION_STORAGE_CALLS),
    ("EraseAuthorPayload", "userErrors"): _length(lambda _: 1),
    ("SetAttributeDefinitionsPayload", "definitions"): _length(lambda _: ATTRIBUTES_MAX),
    ("SetAttributeDefinitionsPayload", "userErrors"): _length(lambda _: PROBLEMS_MAX + 3),
    ("SetTopicTaxonomyPayload", "userErrors"): _length(lambda _: 1),
    ("SetProductGroupPayload", "userErrors"): _length(lambda _: 2),
    ("Query", "productGroup"): _calls(1),
    # One Query of the endpoints' partition.
    ("Query", "webhookEndpoints"): lambda _a, _l: FieldCost(1, ENDPOINTS_MAX),
    ("WebhookEndpoint", "events"): _length(lambda _: len(EventType)),
    ("WebhookEndpoint", "productIds"): _length(lambda _: FILTER_MAX),
    ("WebhookEndpoint", "groupIds"): _length(lambda _: FILTER_MAX),
    ("WebhookEndpoint", "ratings"): _length(lambda _: 5),
    # The rate's call, the count and the endpoint read, the write retried (at most 5 each).
    ("Mutation", "createWebhookEndpoint"): _calls(WEBHOOK_MUTATION_CALLS),
    ("Mutation", "updateWebhookEndpoint"): _calls(WEBHOOK_MUTATION_CALLS),
    ("Mutation", "deleteWebhookEndpoint"): _calls(WEBHOOK_MUTATION_CALLS),
    ("Mutation", "rotateWebhookSecret"): _calls(WEBHOOK_MUTATION_CALLS),
    ("CreateWebhookEndpointPayload", "userErrors"): _length(lambda _: 2 * FILTER_MAX + 4),
    ("UpdateWebhookEndpointPayload", "userErrors"): _length(lambda _: 2 * FILTER_MAX + 5),
    ("DeleteWebhookEndpointPayload", "userErrors"): _length(lambda _: 1),
    ("RotateWebhookSecretPayload", "userErrors"): _length(lambda _: 1),
    # A page of members (one Query) and the group's count, read together.
    ("ProductGroup", "products"): _members,
    ("ProductGroup", "stats"): _calls(1),
    ("ProductGroup", "comments"): _group_comments,
    ("ProductGroup", "structuredData"): _structured_data(_group_comments),
    ("ProductGroup", "attributeDefinitions"): lambda _a, _l: FieldCost(1, ATTRIBUTES_MAX),
    ("ProductGroup", "attributeSummary"): lambda _a, _l: FieldCost(2, ATTRIBUTES_MAX),
    ("ProductGroup", "topics"): _topics,
    ("ProductConnection", "edges"): _length(lambda lengths: lengths.page),
    ("ProductConnection", "nodes"): _length(lambda lengths: lengths.page),
    ("Product", "topics"): _topics,
    ("AttributeDefinition", "values"): _length(lambda _: VALUES_MAX),
    ("Comment", "attributes"): _length(lambda _: MAX_ATTRIBUTE_ANSWERS),
    ("Comment", "topics"): _length(lambda _: MAX_TOPICS),
    ("Comment", "topicMatches"): _length(lambda _: MAX_TOPICS * MATCHES_PER_TOPIC),
    ("AttributeDistribution", "values"): _length(lambda _: SUMMARY_VALUES_MAX),
    ("Subscription", "commentEvents"): _comment_events,
    ("Query", "moderationQueue"): _partition,
    ("Viewer", "comments"): _partition,
    ("Mutation", "createComment"): _calls(MUTATION_STORAGE_CALLS),
    ("Mutation", "deleteComment"): _calls(MUTATION_STORAGE_CALLS),
    ("Mutation", "updateComment"): _calls(MUTATION_STORAGE_CALLS),
    ("Mutation", "moderateComment"): _calls(MUTATION_STORAGE_CALLS),
    # A repeated report reads the comment once more to return it.
    ("Mutation", "reportComment"): _calls(MUTATION_STORAGE_CALLS + 1),
    ("Mutation", "replyToComment"): _calls(MUTATION_STORAGE_CALLS),
    ("Mutation", "deleteReply"): _calls(MUTATION_STORAGE_CALLS),
    # Its reads of the vote item come out of the write's own bound.
    ("Mutation", "voteHelpful"): _calls(MUTATION_STORAGE_CALLS),
    # A batched read of the viewer's votes (priced per comment, an upper bound).
    ("Comment", "viewerVote"): _calls(1),
    ("CommentConnection", "edges"): _length(lambda lengths: lengths.page),
    ("CommentConnection", "nodes"): _length(lambda lengths: lengths.page),
    ("QueryPlan", "queries"): _length(lambda lengths: lengths.queries),
    ("QueryPlan", "skippedRatings"): _length(lambda _: len(rules.RATINGS)),
    ("RatingStats", "histogram"): _length(lambda _: len(rules.RATINGS)),
    # One problem per input field at most (createComment checks six), else one of a rule;
    # its answers' problems as storage collects them, at most PROBLEMS_MAX (and one more
    # saying there were more).
    ("CreateCommentPayload", "userErrors"): _length(lambda _: 6 + PROBLEMS_MAX + 1),
    ("DeleteCommentPayload", "userErrors"): _length(lambda _: 1),
    # updateComment checks five fields and the answers; the others two at most.
    ("UpdateCommentPayload", "userErrors"): _length(lambda _: 5 + PROBLEMS_MAX + 1),
    ("ModerateCommentPayload", "userErrors"): _length(lambda _: 2),
    ("ReportCommentPayload", "userErrors"): _length(lambda _: 2),
    ("ReplyToCommentPayload", "userErrors"): _length(lambda _: 2),
    ("DeleteReplyPayload", "userErrors"): _length(lambda _: 1),
    ("VoteHelpfulPayload", "userErrors"): _length(lambda _: 1),
    ("Viewer", "roles"): _length(lambda _: len(KNOWN_ROLES)),
    ("Moderation", "reasons"): _length(lambda _: len(REPORT_REASONS)),
    # ["input", "<field>"], or an answer's ["input", "attributes", "<n>", "value"]
    ("UserError", "field"): _length(lambda _: 4),
}


@dataclass(frozen=True, slots=True)
class _Tally:
    points: int
    nodes: int
    # (response key, field name) of the leaf fields selected on the object.
    leaves: frozenset[tuple[str, str]]


_NOTHING = _Tally(0, 0, frozenset())
Composite = GraphQLObjectType | GraphQLInterfaceType | GraphQLUnionType


def _copies(leaves: frozenset[tuple[str, str]]) -> int:
    """How many times an object renders its most repeated field (aliases), at least once."""
    return max(Counter(name for _, name in leaves).values(), default=1)


class Estimator:
    """Walks an operation once; each fragment once per (object type, list lengths)."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: VariableValues,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.memo: dict[tuple[str, str, Lengths], _Tally] = {}
        # How often each fragment's selections were walked; tests read it.
        self.walks: Counter[str] = Counter()
        # Listing fields met on the way (see Estimate.listings).
        self.listings: set[str] = set()

    def selection_set(
        self, parent: GraphQLObjectType, node: SelectionSetNode, lengths: Lengths
    ) -> _Tally:
        points = nodes = 0
        leaves: set[tuple[str, str]] = set()
        for selection in node.selections:
            tally = _NOTHING
            if isinstance(selection, FieldNode):
                tally = self.field(parent, selection, lengths)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                if condition is None or self._applies(condition.name.value, parent):
                    tally = self.selection_set(parent, selection.selection_set, lengths)
            elif isinstance(selection, FragmentSpreadNode):
                tally = self.fragment(selection.name.value, parent, lengths)
            points += tally.points
            nodes += tally.nodes
            leaves |= tally.leaves
        return _Tally(points, nodes, frozenset(leaves))

    def fragment(self, name: str, parent: GraphQLObjectType, lengths: Lengths) -> _Tally:
        key = (name, parent.name, lengths)
        found = self.memo.get(key)
        if found is not None:
            return found
        self.memo[key] = _NOTHING  # validation has refused cycles; this ends one anyway
        definition = self.fragments.get(name)
        tally = _NOTHING
        if definition is not None and self._applies(definition.type_condition.name.value, parent):
            self.walks[name] += 1
            tally = self.selection_set(parent, definition.selection_set, lengths)
        self.memo[key] = tally
        return tally

    def field(self, parent: GraphQLObjectType, node: FieldNode, lengths: Lengths) -> _Tally:
        name = node.name.value
        leaf = frozenset({(node.alias.value if node.alias else name, name)})
        definition: GraphQLField | None = parent.fields.get(name)
        if definition is None:
            return _Tally(0, 0, leaf)  # __typename and introspection
        rule = RULES.get((parent.name, name))
        cost = FieldCost() if rule is None else rule(self.arguments(parent, node), lengths)
        if cost.lengths is not None:
            self.listings.add(f"{parent.name}.{name}")
        named = get_named_type(definition.type)
        if node.selection_set is None or not isinstance(named, Composite):
            return _Tally(cost.points, cost.held, leaf)
        below = cost.lengths or lengths
        points = objects = 0
        for runtime in self._possible(named):
            inner = self.selection_set(runtime, node.selection_set, below)
            points = max(points, inner.points)
            objects = max(objects, _copies(inner.leaves) + inner.nodes)
        return _Tally(cost.points + cost.items * points, cost.items * objects, frozenset())

    def arguments(self, parent: GraphQLObjectType, node: FieldNode) -> Args:
        """The field's coerced arguments; None when they do not coerce (execution will fail
        the field, and its worst case is priced). Lists longer than their cap refuse."""
        definition = parent.fields[node.name.value]
        if not definition.args:
            return {}
        try:
            values = get_argument_values(definition, node, self.variables)
        except GraphQLError:
            return None
        for argument, value in values.items():
            cap = list_cap(parent.name, node.name.value, argument)
            if isinstance(value, list) and len(value) > cap:
                error = list_too_long(f"The list given to {argument}", len(value), cap)
                raise Refusal(GraphQLError(error.message, node, extensions=error.extensions))
        return values

    def _possible(self, named: Composite) -> list[GraphQLObjectType]:
        if isinstance(named, GraphQLObjectType):
            return [named]
        return list(self.schema.get_possible_types(named))

    def _applies(self, condition: str, parent: GraphQLObjectType) -> bool:
        target = self.schema.get_type(condition)
        if target is parent:
            return True
        if isinstance(target, GraphQLInterfaceType | GraphQLUnionType):
            return self.schema.is_sub_type(target, parent)
        return False


def _bad_input(message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"code": "BAD_USER_INPUT"})


def select_operation(document: DocumentNode, name: str | None) -> OperationDefinitionNode:
    """The operation a request runs: the one named, or the only one (GraphQL over HTTP:
    several operations without an operationName is a request error)."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if name is None:
        if len(operations) == 1:
            return operations[0]
        raise Refusal(
            _bad_input(
                f"The document has {len(operations)} operations; "
                "name the one to run in operationName."
            )
        )
    for operation in operations:
        if operation.name is not None and operation.name.value == name:
            return operation
    raise Refusal(_bad_input("The document has no operation of the name in operationName."))


def estimate(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: object,
) -> Estimate:
    """Upper bounds of the storage calls the operation may make and of the objects its
    response may hold. Raises Refusal when the request must not run at all."""
    operation = select_operation(document, operation_name)
    root = schema.get_root_type(operation.operation)
    if root is None:
        raise Refusal(_bad_input(f"This API has no {operation.operation.value} operations."))
    if variables is None:
        variables = {}
    if not isinstance(variables, dict):
        raise Refusal(_bad_input("The variables must be a JSON object."))
    too_large = check_variable_sizes(variables)
    if too_large is not None:
        raise Refusal(too_large)
    coerced = get_variable_values(schema, operation.variable_definitions or (), variables)
    if isinstance(coerced, list):
        raise Refusal(*coerced)
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    estimator = Estimator(schema, fragments, coerced)
    tally = estimator.selection_set(root, operation.selection_set, WORST)
    return Estimate(tally.points, tally.nodes, frozenset(estimator.listings))


def over_budget(found: Estimate, budget: int, max_nodes: int) -> GraphQLError | None:
    if found.points > budget:
        return GraphQLError(
            f"The query could cost {found.points} points; at most {budget} are allowed. "
            "Ask for smaller pages or fewer products per request.",
            extensions={"code": "QUERY_TOO_COMPLEX", "cost": found.points, "budget": budget},
        )
    if found.nodes > max_nodes:
        return GraphQLError(
            f"The response could hold {found.nodes} objects; at most {max_nodes} are "
            "allowed. Ask for smaller pages or fewer nested lists.",
            extensions={
                "code": "QUERY_TOO_COMPLEX",
                "nodes": found.nodes,
                "nodeBudget": max_nodes,
            },
        )
    return None


def provided_operation_name(context: ExecutionContext) -> str | None:
    """The operationName of the request itself. Strawberry's ``operation_name`` falls back to
    the first operation's name when the request gave none, which would run the first of
    several operations."""
    name = getattr(context, "_provided_operation_name", None)
    return name if isinstance(name, str) else None


def cost_limit(budget: int, max_nodes: int = MAX_NODES) -> Callable[[], SchemaExtension]:
    """An extension that refuses requests costing more than ``budget`` points or holding more
    than ``max_nodes`` objects with QUERY_TOO_COMPLEX, refuses requests that must not run,
    hands the accepted cost to the request's storage meter as its budget of calls, and
    reports it in ``extensions.cost``."""

    class CostLimit(SchemaExtension):
        found: Estimate | None = None

        def on_execute(self) -> Generator[None, None, None]:
            context = self.execution_context
            document = context.graphql_document
            try:
                if document is None:
                    raise Refusal(_bad_input("The request has no document."))
                found = self.found = estimate(
                    context.schema._schema,
                    document,
                    provided_operation_name(context),
                    context.variables,
                )
                error = over_budget(found, budget, max_nodes)
                if error is not None:
                    raise Refusal(error)
            except Refusal as refusal:
                context.result = ExecutionResult(data=None, errors=refusal.errors)
            else:
                if isinstance(context.context, Context):
                    context.context.limit_storage_calls(found.points, budget)
            yield

        def get_results(self) -> dict[str, Any]:
            if self.found is None:
                return {}
            return {
                "cost": {
                    "requested": self.found.points,
                    "budget": budget,
                    "nodes": self.found.nodes,
                    "nodeBudget": max_nodes,
                }
            }

    return CostLimit
