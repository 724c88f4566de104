"""Export: a derivation as LaTeX (:mod:`.latex`) or Markdown (:mod:`.markdown`); measures as code (:mod:`.codegen`)."""
