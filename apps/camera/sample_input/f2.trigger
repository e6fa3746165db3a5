{"camera":"cam0","frame":20,"seed":42}
