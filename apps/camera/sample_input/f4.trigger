{"camera":"cam0","frame":40,"seed":42}
