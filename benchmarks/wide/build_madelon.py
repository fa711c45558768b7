"""madelon.csv.gz from its two sources (SOURCE.md beside this file): run in the folder that holds them."""
import io, numpy as np, pandas as pd
# ARFF (dense, numeric, class {'-1','1'}) -> DataFrame
lines = open("madelon.arff").read().splitlines()
names = [l.split()[1] for l in lines if l.lower().startswith("@attribute")]
start = next(i for i,l in enumerate(lines) if l.lower().startswith("@data")) + 1
arff = pd.read_csv(io.StringIO("\n".join(l for l in lines[start:] if l.strip())), header=None, names=names, quotechar="'")
print("arff", arff.shape, arff["class"].value_counts().to_dict(), "NaN", int(arff.isna().sum().sum()))
X = arff.drop(columns="class"); y = arff["class"].astype(int)
# cross-check against madelon_train.data/labels from second repo (first 1170 rows present there)
tr = pd.read_csv("madelon_train.data", sep=r"\s+", header=None)
n = (tr.notna().sum(axis=1) == 500).sum()
ok_rows = (X.iloc[:n].values == tr.iloc[:n, :500].values).all()
lab = pd.read_csv("madelon_train.labels", header=None)[0]
print("cross-check rows", n, "equal:", ok_rows, "labels equal:", (lab.values == y.values).all(), len(lab))
# LIBSVM validation set (600 labelled rows)
rows, labs = [], []
for l in open("madelon.t"):
    p = l.split(); labs.append(int(float(p[0]))); r = np.zeros(500, dtype=np.int64)
    for kv in p[1:]:
        k, v = kv.split(":"); r[int(k)-1] = int(float(v))
    rows.append(r)
V = pd.DataFrame(np.array(rows), columns=X.columns); vy = pd.Series(labs)
print("valid", V.shape, vy.value_counts().to_dict(), "range", V.values.min(), V.values.max(), "train range", X.values.min(), X.values.max())
Xall = pd.concat([X.astype(np.int64), V], ignore_index=True)
df = Xall.copy(); df["target"] = pd.concat([y, vy], ignore_index=True).values
print("final", df.shape, df["target"].value_counts().to_dict(), "NaN", int(df.isna().sum().sum()), "dup rows", int(df.duplicated().sum()))
from pathlib import Path
out = Path(__file__).resolve().parents[1] / ".data" / "wide" / "madelon.csv.gz"
out.parent.mkdir(parents=True, exist_ok=True)
df.to_csv(out, index=False, compression="gzip")
