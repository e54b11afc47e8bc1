"""``python -m llama_cpp.server`` with llama.cpp's extra weight buffers (AMX, CPU repack) off.

llama-cpp-python 0.3.36 built on a CPU with AMX (Intel Sapphire Rapids and later) repacks the
model's weights for AMX and then dies with SIGSEGV on the first prompt longer than one token
(llama.cpp's AMX path: ggml-org/llama.cpp #20824, #16315). Its server has no switch for
llama.cpp's ``use_extra_bufts``, so this launcher sets it off in the model's default parameters
and hands over to the server's own ``main``, arguments unchanged. On other CPUs it costs the
repacked matrix kernels' speed, nothing else.
"""

from __future__ import annotations

from typing import Any

import llama_cpp.llama_cpp as bindings
from llama_cpp.server.__main__ import main

_defaults = bindings.llama_model_default_params


def _without_extra_buffers() -> Any:
    params = _defaults()
    params.use_extra_bufts = False
    return params


bindings.llama_model_default_params = _without_extra_buffers

if __name__ == "__main__":
    main()
