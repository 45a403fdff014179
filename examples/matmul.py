"""An ordinary numpy program: nothing in it knows gemmd. Run under the
BLAS shim, its two large products are computed by gemmd:

    LD_PRELOAD=libgemmd_blas.so GEMMD_BLAS_VERBOSE=1 python3 matmul.py
"""

import numpy as np

rng = np.random.default_rng()
a = rng.standard_normal((800, 600))
b = rng.standard_normal((600, 700))
c = a @ b  # 6.7e8 flops, over the shim's threshold: dgemm
d = a.T.astype(np.float32) @ c.astype(np.float32)  # 6.7e8 flops: sgemm
small = a[:10, :10] @ b[:10, :10]  # tiny: the host BLAS, as always
print("checksum", float(c.sum()), float(d.sum()), float(small.sum()))
