{"camera":"cam0","frame":50,"seed":42}
