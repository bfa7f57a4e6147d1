
	
v1Pod