"""The glossary's links all resolve, it defines the course's core vocabulary, and its exercise
checker accepts the reference solution and rejects typical wrong answers."""

import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from wrong_answers import assert_fails_with

from jaxcourse.exercises.glossary import check_abstract_tree
from tools import qmd, quarto_check
from tools.crossref import all_targets, number_book

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "chapters" / "glossary.qmd"

REQUIRED_TERMS = [
    "Tracer",
    "jaxpr",
    "HLO",
    "StableHLO",
    "XLA",
    "Weak type",
    "Static argument",
    "Pytree",
    "Leaf",
    "Aux data",
    "Treedef",
    "Key",
    "`fold_in`",
    "Mesh",
    "Sharding",
    "PartitionSpec",
    "Collective",
    "Donation",
    "Fusion",
    "Jit cache",
    "Persistent compilation cache",
    "Abstract value",
    "Batching axis",
    "`custom_jvp`, `custom_vjp`",
    "JVP, VJP",
    "Primal",
    "Tangent",
    "Cotangent",
    "Residual",
    "Transpose",
    "Linearize",
    "Rematerialisation",
    "Committed array",
    "Replicated, varying",
    "Lowered, Compiled",
    "`ShapeDtypeStruct`",
    "Matmul precision",
]


def listed_anchors() -> set[str]:
    """Every cross-reference target defined in a page that _quarto.yml lists."""
    return set(all_targets(number_book(ROOT)))


def glossary_entries() -> dict[str, str]:
    """{term: its definition} from the glossary's definition list."""
    prose, _ = qmd.split_blocks(GLOSSARY.read_text())
    entries = re.findall(r"^(\S[^\n]*)\n:   (.*?)(?=\n\n|\Z)", prose, re.MULTILINE | re.DOTALL)
    return {
        re.sub(r"^\[(.*)\]\{#gloss-[\w-]+\}$", r"\1", term.strip()): definition
        for term, definition in entries
    }


def test_every_crossreference_in_the_glossary_has_an_anchor_in_a_listed_chapter():
    keys = [key for key, _ in quarto_check._at_keys(GLOSSARY.read_text())]
    crossrefs = [key for key in keys if key.split("-", 1)[0] in quarto_check.CROSSREF_PREFIXES]
    assert len(crossrefs) >= 30
    assert sorted(set(crossrefs) - listed_anchors()) == []


def test_every_qmd_link_in_the_glossary_points_to_a_listed_page():
    prose, _ = qmd.split_blocks(GLOSSARY.read_text())
    links = qmd.QMD_LINK.findall(qmd.INLINE_CODE.sub(" ", prose))
    listed = {Path(page).as_posix() for page in qmd.listed_pages(ROOT)}
    for link in links:
        target = (GLOSSARY.parent / link).resolve()
        assert target.is_file(), f"{link} does not exist"
        assert target.relative_to(ROOT).as_posix() in listed, f"{link} is not in _quarto.yml"


def test_the_glossary_defines_the_core_terms_each_with_a_link():
    entries = glossary_entries()
    assert [term for term in REQUIRED_TERMS if term not in entries] == []
    unlinked = [
        term for term, text in entries.items() if "@sec-" not in text and ".qmd)" not in text
    ]
    assert unlinked == []
    assert list(entries) == sorted(entries, key=lambda term: term.strip("`").lower())


def test_the_glossary_is_listed_after_the_workshop():
    appendices = qmd.load_config(ROOT)["book"]["appendices"]
    assert appendices.index("chapters/glossary.qmd") > appendices.index("workshop.qmd")


# Claims of the definitions, pinned (issue 23) -----------------------------------------------------


def test_a_collective_works_under_vmap_with_an_axis_name():
    """Collective: not only pmap and shard_map."""
    centred = jax.vmap(lambda x: x - jax.lax.pmean(x, "batch"), axis_name="batch")(jnp.arange(4.0))
    np.testing.assert_allclose(centred, [-1.5, -0.5, 0.5, 1.5])


def test_committed_arrays():
    """Committed array: device_put commits, jnp.ones does not, a result of committed inputs is committed."""
    placed = jax.device_put(jnp.ones(3), jax.devices()[0])
    assert not jnp.ones(3).committed and placed.committed
    assert jax.jit(lambda x: 2 * x)(placed).committed


def test_the_jit_cache_key_holds_weak_types_and_x64():
    """Jit cache: a weakly typed 2.0 and a float32 2.0 compile twice; x64 once more."""
    f = jax.jit(lambda x: x * 2)
    f(2.0)
    f(jnp.float32(2.0))
    assert f._cache_size() == 2
    with jax.enable_x64(True):
        f(jnp.float32(2.0))
    assert f._cache_size() == 3


def test_the_persistent_cache_options_exist_and_it_is_off_by_default():
    """Persistent compilation cache: the two options the definition names. Off in a fresh
    process (tests/conftest.py turns it on in the test processes)."""
    fresh = subprocess.run(
        [sys.executable, "-c", "import jax; print(jax.config.jax_compilation_cache_dir)"],
        env={k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert fresh.stdout.strip() == "None"
    assert jax.config.jax_persistent_cache_min_compile_time_secs >= 0


def test_explicit_axes_need_set_mesh_for_a_bare_partition_spec():
    """Explicit axes: sharded inputs carry their mesh; a bare P needs jax.set_mesh."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((len(jax.devices()),), ("data",))
    assert mesh.axis_types == (jax.sharding.AxisType.Explicit,)
    x = jax.device_put(jnp.ones((len(jax.devices()) * 2, 3)), NamedSharding(mesh, P("data")))
    assert "@data" in str(jax.typeof(jax.jit(lambda x: 2 * x)(x)))
    with pytest.raises(
        ValueError, match="Using PartitionSpec when you are not under a mesh context is not allowed"
    ):
        jax.jit(lambda x: jax.reshard(x, P()))(x)
    with jax.set_mesh(mesh):
        assert "@" not in str(jax.typeof(jax.jit(lambda x: jax.reshard(x, P()))(x)))


# The exercise ------------------------------------------------------------------------------------


def abstract_tree(tree):
    return jax.tree.map(
        lambda leaf: jax.ShapeDtypeStruct(jnp.shape(leaf), jnp.result_type(leaf)), tree
    )


def test_abstract_tree_reference_and_eval_shape_pass():
    assert check_abstract_tree(abstract_tree)
    assert check_abstract_tree(lambda tree: jax.eval_shape(lambda t: t, tree))


def test_abstract_tree_stub_is_not_yet():
    def stub(tree):
        raise NotImplementedError

    assert_fails_with(check_abstract_tree(stub), "no answer yet")


def test_abstract_tree_list_of_leaves_loses_the_structure():
    def as_list(tree):
        return [
            jax.ShapeDtypeStruct(jnp.shape(leaf), jnp.result_type(leaf))
            for leaf in jax.tree.leaves(tree)
        ]

    assert_fails_with(check_abstract_tree(as_list), "keep the tree's structure")


def test_abstract_tree_shapes_only_fail():
    assert_fails_with(check_abstract_tree(lambda tree: jax.tree.map(jnp.shape, tree)), "treedef")


def test_abstract_tree_numpy_dtypes_fail():
    """NumPy gives a Python float float64; JAX traces it as float32."""

    def numpy_dtypes(tree):
        return jax.tree.map(
            lambda leaf: jax.ShapeDtypeStruct(np.shape(leaf), np.asarray(leaf).dtype), tree
        )

    assert_fails_with(check_abstract_tree(numpy_dtypes), "Python floats in float32")


def test_abstract_tree_returning_the_data_fails():
    assert_fails_with(check_abstract_tree(lambda tree: tree), "still data")


class EmptyClass:
    """A class where a function was asked for."""


def test_abstract_tree_with_the_wrong_parameters_gets_a_signature_hint():
    assert_fails_with(
        check_abstract_tree(lambda: None), "abstract_tree cannot be called with 1 argument(s)"
    )
    assert_fails_with(
        check_abstract_tree(EmptyClass), "abstract_tree cannot be called with 1 argument(s)"
    )


def test_abstract_tree_returning_none_or_one_array_keeps_no_structure():
    assert_fails_with(check_abstract_tree(lambda tree: None), "got None")
    assert_fails_with(
        check_abstract_tree(lambda tree: jnp.ones((2, 7))), "got an array of shape (2, 7)"
    )


def test_abstract_tree_leaves_with_a_bad_shape_get_a_hint():
    class NotAShape:
        shape, dtype = 3, "not a dtype"

    assert_fails_with(
        check_abstract_tree(lambda tree: jax.tree.map(lambda leaf: NotAShape(), tree)),
        "tuple of ints",
    )
