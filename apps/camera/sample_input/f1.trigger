{"camera":"cam0","frame":10,"seed":42}
