"""Figures: each module defines ``FIGURES = {name: function(out_png, out_csv)}`` (collected by ``qderive figure``)."""
