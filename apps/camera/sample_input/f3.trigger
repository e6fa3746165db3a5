{"camera":"cam0","frame":30,"seed":42}
