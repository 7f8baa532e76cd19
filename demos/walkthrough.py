"""A short tour of Ember's tensor API (what `make demo` runs until the MNIST demo lands)."""

import ember
import ember.nn.functional as F

print(f"ember {ember.__version__} — default backend: {ember.default_backend().name}")

x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
print("x =", x)
print("x.sum(dim=1) =", x.sum(dim=1))
print("x @ x.T =", x @ x.T)
print("x[:, ::2] =", x[:, ::2])
print("softmax(x, dim=1) =", F.softmax(x, dim=1))

ember.seed(0)
images = ember.randn(2, 1, 8, 8)
kernel = ember.ones(4, 1, 3, 3) / 9
features = F.relu(F.conv2d(images, kernel, padding="same"))
print("conv2d → relu → max_pool2d:", F.max_pool2d(features, 2).shape)

# The same code on the pure-Python reference backend (runs where numpy doesn't: Pyodide).
with ember.use_backend("python"):
    y = ember.arange(6).reshape(2, 3).float()
    print("python backend:", y.mean(dim=0), y.backend.name)

print("promotion: int + float32 →", (ember.tensor([1, 2]) + ember.tensor([0.5, 0.5])).dtype)
