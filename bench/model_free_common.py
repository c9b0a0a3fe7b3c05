"""What the model-free benchmarks (model_free_bench.py: JSONL, hf_bench.py: HF datasets) share: the synthetic rows,
the processing_params of their config, and the Python peer's per-row work (the original's: compiled JMESPath and
Jinja2 templates, the output schema rendered per row)."""
import jinja2
import jmespath
import yaml

# The config's processing_params, as text for str.format (braces doubled).
PROCESSING = """processing_params:
  inputs:
    - name: question
      key: question
    - name: answer
      key: answers[0].text
    - name: lang
      key: meta.lang
    - name: tags
      key: meta.tags
    - name: score
      key: meta.score
  outputs: []
  remove_columns: true
  output_schema:
    id: "{{{{ question | length }}}}-{{{{ lang }}}}"
    tags: "{{{{ tags }}}}"
    score: "{{{{ score }}}}"
    conversations:
      - role: user
        content: "Answer in {{{{ lang | upper }}}}: {{{{ question }}}}"
      - role: assistant
        content: "{{{{ answer }}}}"
    summary: "{{% if score > 0.5 %}}good{{% else %}}weak{{% endif %}} ({{{{ tags | join(', ') }}}})"
"""


def synthetic_row(i):
    return {
        "question": f"What is the capital of country number {i}? Please answer briefly.",
        "answers": [{"text": f"The capital of country {i} is city {i}.", "score": 0.9}],
        "meta": {"lang": ["en", "fr", "de"][i % 3], "tags": ["geo", f"t{i % 7}"], "score": (i % 10) / 10},
        "source": "synthetic",
    }


def row_function(config_path):
    """The Python peer's work for one row (a dict) -> the output row, compiled once from the config."""
    pp = yaml.safe_load(open(config_path))["processing_params"]
    env = jinja2.Environment()
    inputs = [(i["name"], jmespath.compile(i["key"])) for i in pp["inputs"]]

    def compile_node(node):
        if isinstance(node, dict):
            return ("map", [(k, compile_node(v)) for k, v in node.items()])
        if isinstance(node, list):
            return ("list", [compile_node(v) for v in node])
        if isinstance(node, str):
            s = node.strip()
            plain = s[2:-2].strip() if s.startswith("{{") and s.endswith("}}") and s[2:-2].strip().isidentifier() else None
            return ("tmpl", (env.from_string(node), plain))
        return ("const", node)

    def render(node, ctx):
        kind, v = node
        if kind == "map":
            return {k: render(c, ctx) for k, c in v}
        if kind == "list":
            return [render(c, ctx) for c in v]
        if kind == "tmpl":
            t, plain = v
            if plain is not None and plain in ctx and not isinstance(ctx[plain], str):  # mmirage keeps JSON types
                return ctx[plain]
            return t.render(**ctx)
        return v

    schema = compile_node(pp["output_schema"])

    def fn(row):
        ctx = {}
        for name, expr in inputs:
            value = expr.search(row)
            if value is None:
                raise ValueError(f"Input variable '{name}' not found")
            ctx[name] = value
        return render(schema, ctx)

    return fn
