"""The signalling instrument (Huynh, "Consistency Without Alignment", arXiv 2609.00576).

A chooser who knows a hidden (Means, Clue) pair sends one option of a fixed property tile; the
salience (fit-maximising), Bayes (posterior-maximising) and uniform-random references are exact,
so any chooser's coordinate can be placed between them. Section numbers in docstrings are the
paper's. The flow: norms bundle (``load_things``, ``load_lancaster``) → ``build_pool`` →
``load_tiles`` → ``generate_candidates`` (oracle under both decay families) →
``select_items`` → ``build_item_set`` → ``render_queries`` → any scorer or reference chooser
(uniform, salience, Bayes oracle, cosine, SWOW walk, ConceptNet path) → ``coordinate_table`` →
``summarise_cells``. ``build_signalling_items`` runs the build in one call; README.md in this
directory lists every choice made where the paper is silent.
"""

from choiceaudit.instruments.signalling._analysis import (
    cell_summary,
    coordinate_table,
    item_references,
    summarise_cells,
)
from choiceaudit.instruments.signalling._association_choosers import (
    STOPWORDS,
    ConceptNetPathChooser,
    SwowWalkChooser,
    option_content_words,
)
from choiceaudit.instruments.signalling._associations import (
    AssociationStrengths,
    ConceptNetEdges,
    conceptnet_coverage,
    read_conceptnet_assertions,
    read_swow_strengths,
    swow_coverage,
    with_coverage,
)
from choiceaudit.instruments.signalling._build import (
    BuildResult,
    build_signalling_items,
    load_norms,
    tile_screen,
)
from choiceaudit.instruments.signalling._choosers import (
    BayesOracleChooser,
    CosineChooser,
    Embedder,
    ItemLookup,
    SalienceChooser,
    UniformChooser,
)
from choiceaudit.instruments.signalling._divergence import (
    choice_distributions,
    condition_agreement,
    excess_distance_correlation,
    fit_cost_deciles,
)
from choiceaudit.instruments.signalling._fetch import (
    CHECKSUM_FILE,
    DEFAULT_THINGS_URLS,
    THINGS_FILES,
    THINGS_SHA256,
    ChecksumError,
    FetchReport,
    fetch_things,
)
from choiceaudit.instruments.signalling._fit import (
    DECAY_FAMILIES,
    DecayFamily,
    concept_fit,
    concept_log_fit,
    option_distance,
    pair_fit,
)
from choiceaudit.instruments.signalling._items import (
    BLOCK,
    CandidateBlock,
    RobustnessConfig,
    assess_robustness,
    generate_candidates,
    leaking_concepts,
)
from choiceaudit.instruments.signalling._lancaster import (
    LANCASTER_MODALITIES,
    PERCEPTUAL_SCALE,
    lancaster_files,
    load_lancaster,
)
from choiceaudit.instruments.signalling._norms import (
    Dimension,
    NormsBundle,
    NormsFormatError,
)
from choiceaudit.instruments.signalling._oracle import (
    OracleResult,
    coordinates,
    run_oracle,
)
from choiceaudit.instruments.signalling._pool import (
    Pool,
    build_pool,
    retention_report,
)
from choiceaudit.instruments.signalling._render import (
    CONDITIONS,
    FORMATS,
    INSTRUCTION,
    LABEL_FORMS,
    SALIENCE_SENTENCE,
    Condition,
    Format,
    LabelForm,
    check_item_rendering,
    render_queries,
    render_query,
)
from choiceaudit.instruments.signalling._rsa import (
    INELIGIBLE_BASES,
    IneligibleBaseError,
    literal_listener,
    rsa_speaker,
)
from choiceaudit.instruments.signalling._rsa_chooser import (
    LiteralBase,
    RSAChooser,
)
from choiceaudit.instruments.signalling._selection import (
    SUMMARY_FIELDS,
    Selection,
    build_item_set,
    conflict_rates,
    item_permutations,
    select_items,
)
from choiceaudit.instruments.signalling._tables import (
    item_rows,
    item_set_hash,
    prompt_rows,
)
from choiceaudit.instruments.signalling._things import (
    LIKERT_SCALE,
    PROPERTY_DIMENSIONS,
    SIZE_SCALE,
    PropertyRatings,
    SizeRatings,
    Spose,
    ThingsConcepts,
    load_things,
    read_property_ratings,
    read_size_ratings,
    read_spose,
    read_things_concepts,
)
from choiceaudit.instruments.signalling._tiles import (
    Tile,
    load_tiles,
    rater_disagreement_ratio,
    redundancy_clusters,
    select_tile_dimensions,
    tiles_hash,
    tiles_text,
)

__all__ = [
    "BLOCK",
    "CHECKSUM_FILE",
    "CONDITIONS",
    "DECAY_FAMILIES",
    "DEFAULT_THINGS_URLS",
    "FORMATS",
    "INELIGIBLE_BASES",
    "INSTRUCTION",
    "LABEL_FORMS",
    "LANCASTER_MODALITIES",
    "LIKERT_SCALE",
    "PERCEPTUAL_SCALE",
    "PROPERTY_DIMENSIONS",
    "SALIENCE_SENTENCE",
    "SIZE_SCALE",
    "STOPWORDS",
    "SUMMARY_FIELDS",
    "THINGS_FILES",
    "THINGS_SHA256",
    "AssociationStrengths",
    "BayesOracleChooser",
    "BuildResult",
    "CandidateBlock",
    "ChecksumError",
    "ConceptNetEdges",
    "ConceptNetPathChooser",
    "Condition",
    "CosineChooser",
    "DecayFamily",
    "Dimension",
    "Embedder",
    "FetchReport",
    "Format",
    "IneligibleBaseError",
    "ItemLookup",
    "LabelForm",
    "LiteralBase",
    "NormsBundle",
    "NormsFormatError",
    "OracleResult",
    "Pool",
    "PropertyRatings",
    "RSAChooser",
    "RobustnessConfig",
    "SalienceChooser",
    "Selection",
    "SizeRatings",
    "Spose",
    "SwowWalkChooser",
    "ThingsConcepts",
    "Tile",
    "UniformChooser",
    "assess_robustness",
    "build_item_set",
    "build_pool",
    "build_signalling_items",
    "cell_summary",
    "check_item_rendering",
    "choice_distributions",
    "concept_fit",
    "concept_log_fit",
    "conceptnet_coverage",
    "condition_agreement",
    "conflict_rates",
    "coordinate_table",
    "coordinates",
    "excess_distance_correlation",
    "fetch_things",
    "fit_cost_deciles",
    "generate_candidates",
    "item_permutations",
    "item_references",
    "item_rows",
    "item_set_hash",
    "lancaster_files",
    "leaking_concepts",
    "literal_listener",
    "load_lancaster",
    "load_norms",
    "load_things",
    "load_tiles",
    "option_content_words",
    "option_distance",
    "pair_fit",
    "prompt_rows",
    "rater_disagreement_ratio",
    "read_conceptnet_assertions",
    "read_property_ratings",
    "read_size_ratings",
    "read_spose",
    "read_swow_strengths",
    "read_things_concepts",
    "redundancy_clusters",
    "render_queries",
    "render_query",
    "retention_report",
    "rsa_speaker",
    "run_oracle",
    "select_items",
    "select_tile_dimensions",
    "summarise_cells",
    "swow_coverage",
    "tile_screen",
    "tiles_hash",
    "tiles_text",
    "with_coverage",
]
