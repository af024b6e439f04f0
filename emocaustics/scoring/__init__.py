"""Task-neutral scoring machinery: similarity with each distinct text embedded once (`similarity`)."""
