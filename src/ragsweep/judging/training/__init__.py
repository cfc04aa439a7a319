"""How the trained judges learn: claims made from a corpus by rule, triplets cut from reference spans, the
fine-tuning step they share, and alignment with people's labels."""
